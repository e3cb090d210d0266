// @ts-check
// The ad shop: orders to approve or reject, each order's own page (its ad, the transactions it
// was paid by, what they credited, what happened), and the slots on sale.
import { ApiProblem, Refusal, call, may } from "../api.js";
import { element, words } from "../dom.js";
import { fromBaseUnits } from "../format.js";
import { actionButton, adding, editRow, formOf } from "../forms.js";
import { list, money, number, t } from "../i18n.js";
import { listView } from "../list.js";
import { badge, botChoices, copyable, everything, person, when } from "./common.js";

const ORDER_STATES = ["requested", "approved", "part_paid", "paid", "rejected", "cancelled", "expired"];
// What an admin may do to an order in each state, as billing allows it (ad_orders.end): an
// order part paid is not cancelled here, the advertiser's money being in it.
const STEPS = /** @type {Record<string, string[]>} */ ({
  requested: ["approve", "reject"],
  approved: ["cancel"],
});

/** @param {string} amount USDT as decimal text */
function usdt(amount) {
  return money(amount, "USDT");
}

/** @param {any} ad */
function adText(ad) {
  return ad.text ?? ad.caption ?? t("forwardedPost");
}

/**
 * The buttons for an order's next steps, of those `offered`; reject and cancel ask first.
 * @param {any} order @param {string[]} [offered]
 */
function steps(order, offered = ["approve", "reject", "cancel"]) {
  if (!may("admin")) return [];
  return (STEPS[order.status] ?? []).filter((step) => offered.includes(step)).map((step) => actionButton(step,
    () => stepOf(order.id, step), { confirm: step !== "approve" }));
}

/**
 * One step; when billing refuses it because the order moved on meanwhile (paid in part while
 * the page was open, say), what the order is now and why that rules the step out.
 * @param {number} id @param {string} step
 */
async function stepOf(id, step) {
  try {
    return await call("POST", `/v1/ad-orders/${id}/${step}`, {});
  } catch (error) {
    if (!(error instanceof ApiProblem) || error.status !== 409) throw error;
    const now = await call("GET", `/v1/ad-orders/${id}`);
    throw new Refusal(t(`refused.${step}`, { status: t(now.order.status) }));
  }
}

/** @param {URL} url */
export function orders(url) {
  return listView(url, {
    id: "orders", path: "/v1/ad-orders",
    filters: [{ name: "status", label: "status", values: ORDER_STATES }],
    columns: [
      { label: "order", sort: "id", value: (o) => element("a", { href: `/orders/${o.id}`, text: "#" + number(o.id) }) },
      { label: "ad", value: (o) => adText(o.ad).slice(0, 80) },
      { label: "person", value: (o) => person(o) },
      { label: "price", sort: "price_micros", value: (o) => usdt(o.price) },
      { label: "progress", sort: "paid_micros", value: (o) => progress(o) },
      { label: "status", sort: "status", value: (o) => badge(o.status) },
      { label: "due", value: (o) => when(o.due_at) },
    ],
    // Cancelling is done from the order's own page, where what it cancels is in view.
    actions: (o) => steps(o, ["approve", "reject"]),
  });
}

/** @param {{ price_micros: number, paid_micros: number, price: string, paid: string }} order */
function progress(order) {
  const bar = element("progress", { max: String(order.price_micros), value: String(order.paid_micros) });
  // Each amount isolated, so a Persian page keeps "paid / price" in that order.
  return element("span", { class: "progress" }, bar, " ",
    element("span", {}, element("bdi", { text: usdt(order.paid) }), " / ", element("bdi", { text: usdt(order.price) })));
}

/** A transaction hash, whole and left to right, linked to the workspace's explorer.
 * @param {string} hash @param {string} explorer */
function hashLink(hash, explorer) {
  return element("a", { href: explorer.replace("{hash}", encodeURIComponent(hash)), dir: "ltr", class: "hash", title: hash, rel: "noopener noreferrer", target: "_blank", text: hash });
}

/** One order: the ad, who asked, the amounts, each claimed transaction and what it credited,
 * every event, and the steps it can take. @param {URL} _url @param {number} id */
export async function order(_url, id) {
  const [detail, settings] = await Promise.all([call("GET", `/v1/ad-orders/${id}`), call("GET", "/v1/workspace")]);
  const o = detail.order;
  const facts = element("dl", { class: "facts", id: "order-facts" },
    words("dt", "status"), element("dd", { "data-status": o.status, text: t(o.status) }),
    words("dt", "ad"), element("dd", { text: adText(o.ad) }),
    words("dt", "person"), element("dd", {}, person(o)),
    words("dt", "progress"), element("dd", {}, progress(o)),
    words("dt", "coins"), element("dd", { text: list([o.accepts_usdt && "USDT", o.accepts_trx && "TRX"].filter((c) => typeof c === "string")) }),
    ...(o.pay_to ? [words("dt", "payTo"), element("dd", {}, copyable(o.pay_to))] : []),
    ...(o.trx_rate ? [words("dt", "trxRate"), element("dd", { text: `${usdt(o.trx_rate)} (${o.trx_rate_source})` })] : []),
    words("dt", "created"), element("dd", { text: when(o.created_at) ?? "" }),
    ...(o.due_at ? [words("dt", "due"), element("dd", { text: when(o.due_at) ?? "" })] : []));
  const credited = /** @type {Record<number, any[]>} */ ({});
  for (const credit of detail.credits) (credited[credit.claim_id] ??= []).push(credit);
  const claims = detail.claims.length
    ? element("ul", { class: "claims", id: "order-claims" }, ...detail.claims.map((/** @type {any} */ c) => element("li", { "data-claim": String(c.id) },
      hashLink(c.tx_hash, settings.tx_explorer), ` · ${t(c.state)}${c.reason ? ` (${c.reason})` : ""} · ${when(c.submitted_at)}`,
      ...(credited[c.id] ?? []).map((cr) => element("div", { class: "credit" },
        `${t("creditedAmount")}: `, element("bdi", { text: money(fromBaseUnits(cr.amount, 6), cr.coin.toUpperCase()) }), ` ${t("from")} `,
        element("code", { dir: "ltr", text: cr.sender }))))))
    : words("p", "noClaims", { class: "empty" });
  const events = detail.events.length
    ? element("ol", { class: "events", id: "order-events" }, ...detail.events.map((/** @type {any} */ e) =>
      element("li", { text: `${when(e.created_at)}: ${t(e.kind)} · ${t("advertiserTold")}: ${t(e.state)}` })))
    : words("p", "nothing", { class: "empty" });
  const actions = steps(o);
  return [
    element("h2", { text: `#${number(o.id)}` }), facts,
    ...(actions.length ? [element("div", { class: "actions", id: "order-steps" }, ...actions)] : []),
    words("h3", "claims"), claims, words("h3", "events"), events,
    element("p", {}, words("a", "toOrders", { href: "/orders" })),
  ];
}

/** @param {URL} url */
export async function slots(url) {
  const admin = may("admin");
  const before = [];
  const bots = admin ? await everything("/v1/bots") : [];
  if (admin) {
    before.push(bots.length ? adding("addSlot", formOf("add-slot", [
      { name: "bot_id", label: "bot", choices: botChoices(bots) },
      { name: "kind", label: "kind", options: ["pinned_post", "broadcast", "button"] },
      { name: "title", label: "title", required: true },
      { name: "price", label: "priceUsdt", type: "amount", required: true, ltr: true },
      { name: "accepts_trx", label: "acceptsTrx", type: "checkbox" },
    ], "add", async (v) => {
      await call("POST", "/v1/ad-slots", {
        bot_id: Number(v.bot_id), kind: v.kind, title: v.title, price: v.price, accepts_trx: v.accepts_trx === "true",
      });
      return t("saved");
    })) : words("p", "addBotFirst", { class: "empty" }));
  }
  return listView(url, {
    id: "slots", path: "/v1/ad-slots", before,
    columns: [
      { label: "title", sort: "title", value: (s) => s.title },
      { label: "kind", value: (s) => t(s.kind) },
      { label: "price", sort: "price_micros", value: (s) => usdt(s.price) },
      { label: "coins", value: (s) => list([s.accepts_usdt && "USDT", s.accepts_trx && "TRX"].filter((c) => typeof c === "string")) },
      { label: "status", value: (s) => badge(s.active ? "enabled" : "disabled") },
    ],
    actions: admin ? (s) => [
      editRow("edit", () => formOf(`edit-slot-${s.id}`, [
        { name: "title", label: "title", value: s.title, required: true },
        { name: "price", label: "priceUsdt", value: s.price, type: "amount", required: true, ltr: true },
        { name: "accepts_usdt", label: "acceptsUsdt", type: "checkbox", value: s.accepts_usdt ? "true" : "" },
        { name: "accepts_trx", label: "acceptsTrx", type: "checkbox", value: s.accepts_trx ? "true" : "" },
      ], "save", async (v) => {
        await call("PATCH", `/v1/ad-slots/${s.id}`, {
          title: v.title, price: v.price, accepts_usdt: v.accepts_usdt === "true", accepts_trx: v.accepts_trx === "true",
        });
        return t("saved");
      })),
      actionButton(s.active ? "deactivate" : "activate", () => call("PATCH", `/v1/ad-slots/${s.id}`, { active: !s.active })),
    ] : null,
  });
}
