// @ts-check
// The ad shop: orders to approve or reject, and the slots on sale.
import { call, may } from "../api.js";
import { element, words } from "../dom.js";
import { actionButton, formOf } from "../forms.js";
import { money, number, t } from "../i18n.js";
import { listView } from "../list.js";
import { when } from "./ledger.js";

const ORDER_STATES = ["requested", "approved", "part_paid", "paid", "rejected", "cancelled", "expired"];

/** @param {string} amount USDT as decimal text */
function usdt(amount) {
  return money(amount, "USDT");
}

/** @param {URL} url */
export function orders(url) {
  return listView(url, {
    id: "orders", path: "/v1/ad-orders",
    filters: [{ name: "status", label: "status", values: ORDER_STATES }],
    columns: [
      { label: "order", sort: "id", value: (o) => "#" + number(o.id) },
      { label: "ad", value: (o) => (o.ad.text ?? o.ad.caption ?? t("forwardedPost")).slice(0, 80) },
      { label: "price", sort: "price_micros", value: (o) => usdt(o.price) },
      { label: "progress", sort: "paid_micros", value: (o) => progress(o) },
      { label: "status", sort: "status", value: (o) => t(o.status) },
      { label: "due", value: (o) => when(o.due_at) },
    ],
    actions: (o) => o.status === "requested" && may("admin")
      ? [
        actionButton("approve", () => call("POST", `/v1/ad-orders/${o.id}/approve`, {})),
        actionButton("reject", () => call("POST", `/v1/ad-orders/${o.id}/reject`, {}), { confirm: true }),
      ] : [],
  });
}

/** @param {{ price_micros: number, paid_micros: number, price: string, paid: string }} order */
function progress(order) {
  const bar = element("progress", { max: String(order.price_micros), value: String(order.paid_micros) });
  // Each amount isolated, so a Persian page keeps "paid / price" in that order.
  return element("span", { class: "progress" }, bar, " ",
    element("span", {}, element("bdi", { text: usdt(order.paid) }), " / ", element("bdi", { text: usdt(order.price) })));
}

/** @param {URL} url */
export async function slots(url) {
  const admin = may("admin");
  const before = [];
  if (admin) {
    const bots = (await call("GET", "/v1/bots?limit=200")).items;
    before.push(words("h2", "addSlot"),
      formOf("add-slot", [
        { name: "bot_id", label: "bots", options: bots.map((/** @type {any} */ b) => String(b.id)), plain: true },
        { name: "kind", label: "kind", options: ["pinned_post", "broadcast", "button"] },
        { name: "title", label: "title", required: true },
        { name: "price", label: "priceUsdt", required: true },
        { name: "accepts_trx", label: "acceptsTrx", options: ["no", "yes"] },
      ], "add", async (v) => {
        await call("POST", "/v1/ad-slots", {
          bot_id: Number(v.bot_id), kind: v.kind, title: v.title, price: v.price, accepts_trx: v.accepts_trx === "yes",
        });
        return t("saved");
      }));
  }
  return listView(url, {
    id: "slots", path: "/v1/ad-slots", before,
    columns: [
      { label: "title", sort: "title", value: (s) => s.title },
      { label: "kind", value: (s) => t(s.kind) },
      { label: "price", sort: "price_micros", value: (s) => usdt(s.price) },
      { label: "coins", value: (s) => [s.accepts_usdt && "USDT", s.accepts_trx && "TRX"].filter(Boolean).join(", ") },
      { label: "status", value: (s) => t(s.active ? "enabled" : "disabled") },
    ],
    actions: admin ? (s) => [actionButton(s.active ? "deactivate" : "activate", () =>
      call("PATCH", `/v1/ad-slots/${s.id}`, { active: !s.active }))] : null,
  });
}
