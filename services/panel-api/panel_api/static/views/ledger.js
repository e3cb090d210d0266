// @ts-check
// People and what they paid: people, memberships (with each one's history), invoices, payments
// (with the gateway events that need the owner) and access events.
import { ApiProblem, call, may, Refusal } from "../api.js";
import { element, show, wordChoices, words } from "../dom.js";
import { actionButton, adding, formOf } from "../forms.js";
import { digits, list, money, number, t } from "../i18n.js";
import { latinDigits } from "../format.js";
import { listView } from "../list.js";
import { open, reload } from "../router.js";
import { badge, botChoices, channelChoices, copyable, everything, handoff, idText, person, when, wholeNumber } from "./common.js";

/** @param {URL} url */
export async function people(url) {
  const bots = await everything("/v1/bots");
  return listView(url, {
    id: "people", path: "/v1/people", search: true, csv: "/v1/exports/people.csv",
    filters: bots.length > 1 ? [{ name: "bot", label: "bot", choices: botChoices(bots) }] : [],
    columns: [
      { label: "telegramUser", sort: "telegram_user_id", value: (p) => element("a", { href: `/people/${p.telegram_user_id}` }, idText(p.telegram_user_id)) },
      { label: "name", value: (p) => [p.first_name, p.last_name].filter(Boolean).join(" ") || null },
      { label: "username", value: (p) => p.username ? element("bdi", { dir: "ltr", text: "@" + p.username }) : null },
      { label: "firstSeen", sort: "first_seen_at", value: (p) => when(p.first_seen_at) },
      { label: "lastSeen", sort: "last_seen_at", value: (p) => when(p.last_seen_at) },
    ],
  });
}

/** One person: who they are, the bots they wrote to, their memberships and their payments.
 * @param {URL} url @param {number} telegramUserId */
export async function personPage(url, telegramUserId) {
  const [found, bots] = await Promise.all([call("GET", `/v1/people/by-telegram-id/${telegramUserId}`), everything("/v1/bots")]);
  const names = new Map(bots.map((b) => [b.id, b.username]));
  const who = found.person;
  const name = [who.first_name, who.last_name].filter(Boolean).join(" ");
  const facts = element("dl", { class: "facts", id: "person-facts" },
    words("dt", "name"), element("dd", {}, element("bdi", { text: name || "—" })),
    words("dt", "username"), element("dd", {}, who.username ? element("bdi", { dir: "ltr", text: "@" + who.username }) : t("none")),
    words("dt", "telegramUser"), element("dd", {}, copyable(String(found.telegram_user_id))),
    words("dt", "bots"), element("dd", { text: found.bot_ids.length
      ? list(found.bot_ids.map((/** @type {number} */ id) => `\u2066@${names.get(id) ?? id}\u2069`)) : t("none") }));
  const fixed = { person: String(found.person_id) };
  const held = await listView(url, {
    id: "person-memberships", path: "/v1/memberships", fixed,
    columns: [
      { label: "channel", value: (m) => element("a", { href: `/channels/${m.channel_id}` }, element("bdi", { text: m.channel_title })) },
      { label: "status", value: (m) => badge(m.status) },
      { label: "expires", value: (m) => m.expires_at.startsWith("1970-01-01") ? null : when(m.expires_at) },
      { label: "renewal", value: (m) => m.stars_renewal
        ? t(`renewal.${m.stars_renewal}`, { when: m.stars_renews_at ? when(m.stars_renews_at) : "" })
        : null },
    ],
    actions: (m) => [historyButton(m)],
  });
  const paid = await listView(url, {
    id: "person-payments", path: "/v1/payments", fixed,
    columns: [
      { label: "reference", value: (p) => element("code", { dir: "ltr", text: p.order_reference }) },
      { label: "amount", value: (p) => money(p.amount, p.currency) },
      { label: "applied", value: (p) => badge(p.applied ? "yes" : "no", p.applied ? "good" : "bad") },
      { label: "paidAt", value: (p) => when(p.paid_at) },
    ],
  });
  return [
    element("h2", { text: name || `@${who.username ?? ""}` || String(found.telegram_user_id) }), facts,
    words("h2", "memberships"), ...held,
    words("h2", "payments"), ...paid,
    element("p", {}, words("a", "toPeople", { href: "/people" })),
  ];
}

/** @param {URL} url */
export async function memberships(url) {
  const paid = (await everything("/v1/channels")).filter((c) => c.is_paid);
  const admin = may("admin");
  return listView(url, {
    id: "memberships", path: "/v1/memberships", search: true, csv: "/v1/exports/memberships.csv",
    before: admin ? [bulkBar()] : [],
    select: admin ? (m) => JSON.stringify({ person_id: m.person_id, channel_id: m.channel_id }) : null,
    filters: [
      { name: "status", label: "status", values: ["active", "grace", "expired"] },
      { name: "channel", label: "channel", choices: channelChoices(paid) },
    ],
    columns: [
      { label: "person", value: (m) => person(m) },
      { label: "channel", value: (m) => m.channel_title },
      { label: "status", sort: "status", value: (m) => badge(m.status) },
      // 1970-01-01: every payment refunded, no paid time at all.
      { label: "expires", sort: "expires_at", value: (m) => m.expires_at.startsWith("1970-01-01") ? null : when(m.expires_at) },
      { label: "renewal", value: (m) => m.stars_renewal
        ? t(`renewal.${m.stars_renewal}`, { when: m.stars_renews_at ? when(m.stars_renews_at) : "" })
        : null },
    ],
    actions: (m) => [historyButton(m)],
  });
}

/** What the last bulk action came to, each with whom it was for, until the list is drawn again.
 * @type {Array<{ action: string, who: string[], outcome: string, until?: string | null, detail: string | null }>} */
let outcomes = [];

/** Up to this many, each person's outcome is said; past it, a count per outcome. */
const SAID_ONE_BY_ONE = 20;

/** The most members one bulk request names (the API's limit). */
const BATCH = 200;

/** A key for one press of a bulk action: kept until an answer comes, so a retry after a lost
 * answer is the same request (billing extends and removes nobody twice). */
function pressKey() {
  return crypto.randomUUID();
}

/**
 * Act on the chosen members: extend them by some days, or remove them from their channels now.
 * Each asks first, then says what came of each person.
 * @returns {HTMLElement}
 */
function bulkBar() {
  const days = /** @type {HTMLInputElement} */ (element("input", { id: "extend-days", name: "days", inputmode: "numeric", size: "5", "aria-describedby": "extend-days-problem" }));
  days.value = digits(30);
  const problem = element("span", { class: "field-problem", id: "extend-days-problem" });
  const extend = words("button", "extendChosen", { type: "button", id: "extend" });
  const remove = words("button", "removeChosen", { type: "button", id: "remove", class: "danger" });
  const message = words("button", "messageChosen", { type: "button", id: "message-chosen" });
  const presses = element("div", { class: "presses" }, extend, message, remove);
  const asking = element("span", { class: "asking", role: "group", hidden: "" });
  const results = element("ul", { id: "bulk-results", class: "results", hidden: "", "aria-live": "polite" });
  let key = pressKey();
  if (outcomes.length) {
    // Many at once: how many came to each outcome, then only those that did not go through.
    const many = outcomes.length > SAID_ONE_BY_ONE;
    const counts = new Map();
    for (const r of outcomes) counts.set(r.outcome, (counts.get(r.outcome) ?? 0) + 1);
    const summary = many ? [...counts].map(([outcome, count]) => element("li", { "data-summary": outcome },
      element("span", { text: t(`bulkCount.${outcome}`, { count: number(count) }) }))) : [];
    const each = many ? outcomes.filter((r) => r.outcome === "failed" || r.outcome === "not-found") : outcomes;
    results.replaceChildren(...summary, ...each.map((r) => element("li", { "data-outcome": r.outcome, "data-action": r.action },
      element("bdi", { text: r.who[0] }), " · ", element("bdi", { text: r.who[1] }), ": ",
      element("span", { text: t(`${r.action}.${r.outcome}`, { until: r.until ? when(r.until) ?? "" : "", detail: r.detail ?? "" }) }))));
    results.hidden = false;
    outcomes = [];
  }
  /** @returns {{ person_id: number, channel_id: number }[]} */
  const chosen = () => [...document.querySelectorAll("#memberships input[data-select]:checked")]
    .map((box) => JSON.parse(/** @type {HTMLInputElement} */ (box).value));
  /** Each chosen row's person and channel as the table shows them, by the row's value (read
   * once for a press: up to 2,000 rows). */
  const shown = () => new Map([...document.querySelectorAll("#memberships input[data-select]")].map((box) => {
    const cells = box.closest("tr")?.querySelectorAll("td");
    return [/** @type {HTMLInputElement} */ (box).value, cells ? [cells[1].textContent ?? "", cells[2].textContent ?? ""] : null];
  }));
  /** @param {"extended" | "removed"} action @param {string} path @param {{ members: object[], days?: number }} body */
  const send = async (action, path, { members, ...body }) => {
    try {
      // At most `BATCH` a request, each batch under a key of the press's own, so a retry of
      // the press asks again for exactly what it asked.
      const results = [];
      for (let start = 0; start < members.length; start += BATCH) {
        const part = members.slice(start, start + BATCH);
        const done = await call("POST", path, { request_key: `${key}-${start / BATCH}`, members: part, ...body });
        results.push(...done.results);
      }
      key = pressKey();
      // Said under the bar once the list is drawn again with the new dates.
      const rows = shown();
      outcomes = results.map((/** @type {any} */ r) => ({
        ...r, action,
        who: rows.get(JSON.stringify({ person_id: r.person_id, channel_id: r.channel_id })) ?? [`#${r.person_id}`, ""] }));
      await reload();
      return;
    } catch (error) {
      if (error instanceof ApiProblem) key = pressKey();
      show(error);
    } finally {
      asking.hidden = true;
      presses.hidden = false;
    }
  };
  /** Asks `question` in place of the buttons; yes runs `go`. @param {string} question @param {string} name @param {HTMLElement} from @param {() => void} go */
  const ask = (question, name, from, go) => {
    const yes = element("button", { type: "button", "data-confirm": name, text: t("confirmYes") });
    if (name === "remove") yes.classList.add("danger");
    const no = words("button", "keep", { type: "button" });
    asking.replaceChildren(element("span", { text: question }), yes, no);
    yes.addEventListener("click", () => { yes.setAttribute("disabled", ""); go(); });
    no.addEventListener("click", () => { asking.hidden = true; presses.hidden = false; from.focus(); });
    presses.hidden = true;
    asking.hidden = false;
    no.focus();
  };
  /** The chosen rows, or null when none is (said). */
  const picked = () => {
    const members = chosen();
    if (!members.length) {
      show(new Refusal(t("chooseMembers")));
      return null;
    }
    show(null);
    return members;
  };
  extend.addEventListener("click", () => {
    days.removeAttribute("aria-invalid");
    problem.textContent = "";
    const count = Number(latinDigits(days.value.trim()));
    if (!Number.isInteger(count) || count < 1 || count > 3650) {
      days.setAttribute("aria-invalid", "true");
      problem.textContent = t("e.out-of-range");
      days.focus();
      return;
    }
    const members = picked();
    if (!members) return;
    ask(t("extendSure", { count: number(members.length), days: number(count) }), "extend", extend,
      () => send("extended", "/v1/memberships/extend", { days: count, members }));
  });
  // A broadcast to them: the composer opens with them as its audience.
  message.addEventListener("click", async () => {
    const members = picked();
    if (!members) return;
    handoff.people = [...new Set(members.map((m) => m.person_id))];
    await open("/broadcasts", { push: true, focus: true });
  });
  remove.addEventListener("click", () => {
    const members = picked();
    if (!members) return;
    ask(t("removeSure", { count: number(members.length) }), "remove", remove,
      () => send("removed", "/v1/memberships/remove", { members }));
  });
  return element("section", { class: "bulk", "aria-labelledby": "bulk-heading" },
    words("h2", "bulkHeading", { id: "bulk-heading" }),
    element("div", { class: "field" }, words("label", "extendDays", { for: "extend-days" }), days, problem),
    presses, asking, results);
}

/** @param {{ person_id: number, channel_id: number }} membership */
function historyButton(membership) {
  const button = words("button", "history", { type: "button", "data-action": "history" });
  button.addEventListener("click", async () => {
    try {
      const events = await call("GET", `/v1/memberships/${membership.person_id}/${membership.channel_id}/events?limit=50`);
      const list = element("ul", { class: "history" }, ...events.items.map((/** @type {any} */ e) => element("li", {
        text: `${when(e.at)}: ${e.from_status ? t(e.from_status) + " → " : ""}${t(e.to_status)} (${t(e.cause)})`,
      })));
      button.replaceWith(list);
    } catch (error) {
      show(error);
    }
  });
  return button;
}

/** The form for a new invoice, or why there can be none. @returns {Promise<HTMLElement>} */
async function newInvoice() {
  const [channelList, planList] = await Promise.all([everything("/v1/channels"), everything("/v1/plans?active=true")]);
  const paid = new Set(channelList.filter((c) => c.is_paid).map((c) => c.id));
  const onSale = planList.filter((p) => paid.has(p.channel_id));
  if (!onSale.length) return words("p", "noPaidChannel", { class: "empty" });
  // Only the gateways billing holds keys for.
  /** @type {{ gateways: string[], titles: Record<string, string> } | null} */
  const offered = await call("GET", "/v1/gateways").catch(() => null);
  if (!offered) return words("p", "billingDown", { class: "empty", id: "no-gateways" });
  // Stars invoices are Telegram's, sent by the bot: not one to copy a link of.
  const gateways = offered.gateways.filter((g) => g !== "telegram_stars");
  if (!gateways.length) return words("p", "noGateways", { class: "empty", id: "no-gateways" });
  return formOf("new-invoice", [
    { name: "telegram_user_id", label: "telegramUser", required: true, ltr: true },
    { name: "plan", label: "plan", choices: onSale.map((p) => ({
      value: `${p.channel_id}:${p.id}`, text: `${p.channel_title} · ${p.name} (${money(p.price, p.currency)})` })) },
    { name: "gateway", label: "gateway", choices: gateways.map((g) => ({ value: g, text: offered.titles[g] ?? g })) },
  ], "makeInvoice", async (v) => {
    const [channel, plan] = v.plan.split(":").map(Number);
    const made = await call("POST", "/v1/invoices", {
      telegram_user_id: wholeNumber(v.telegram_user_id), channel_id: channel, plan_id: plan, gateway: v.gateway,
    });
    return element("span", {},
      t("invoiceMade", { amount: money(made.amount, made.currency) }), " ", copyable(made.pay_url));
  }, { refusals: { "unknown-plan": ["plan", "not-found"], "gateway-not-offered": ["gateway", "not-one-of"] } });
}

/** @param {URL} url */
export async function invoices(url) {
  const before = may("admin") ? [adding("newInvoice", await newInvoice())] : [];
  return listView(url, {
    id: "invoices", path: "/v1/invoices", before,
    filters: [{ name: "status", label: "status", values: ["open", "paid", "expired", "cancelled"] }],
    columns: [
      { label: "reference", value: (i) => element("code", { dir: "ltr", text: i.order_reference }) },
      { label: "person", value: (i) => person(i) },
      { label: "amount", sort: "amount_minor", value: (i) => money(i.amount, i.currency) },
      { label: "status", sort: "status", value: (i) => badge(i.status) },
      { label: "created", sort: "created_at", value: (i) => when(i.created_at) },
    ],
  });
}

/**
 * A gateway event that needs the owner in the page's language: when, what came, and why it
 * was not applied, from the event's fields (its `detail` is English, for the API's readers).
 * @param {any} e
 */
function eventNote(e) {
  // Isolated, so a Latin name keeps its place in a Persian sentence.
  const latin = (/** @type {string} */ text) => `\u2068${text}\u2069`;
  /** @type {Record<string, () => string | null>} */
  const why = {
    orphan: () => e.order_reference && t("eventOrphan", { reference: latin(e.order_reference) }),
    amount_mismatch: () => e.paid && e.due && t("eventAmount", { paid: money(e.paid, e.paid_currency), due: money(e.due, e.due_currency) }),
    conflict: () => e.external_payment_id && t("eventConflict", { payment: latin(e.external_payment_id) }),
    gateway_mismatch: () => e.invoice_gateway && t("eventGateway", { gateway: latin(e.invoice_gateway) }),
    refund_unknown: () => e.external_payment_id && t("eventRefundUnknown", { payment: latin(e.external_payment_id) }),
  };
  const said = why[e.outcome]?.();
  const line = t("gatewayEvent", { when: when(e.received_at), gateway: latin(e.gateway), kind: t(e.event_type), outcome: t(e.outcome) });
  return said ? t("gatewayEventWhy", { line, why: said }) : line;
}

/** @param {URL} url */
export async function payments(url) {
  // Gateway events that need the owner: authentic callbacks that could not be applied.
  const events = await call("GET", "/v1/gateway-events?limit=20");
  const paid = (await everything("/v1/channels")).filter((c) => c.is_paid);
  // Each gateway by the name plans show it by; billing away, by its slug.
  /** @type {Record<string, string>} */
  const titles = (await call("GET", "/v1/gateways").catch(() => null))?.titles ?? {};
  const notes = events.items.map((/** @type {any} */ e) => element("li", { "data-event": String(e.id), text: eventNote(e) }));
  return listView(url, {
    id: "payments", path: "/v1/payments", search: true, csv: "/v1/exports/payments.csv",
    before: notes.length ? [words("h2", "needsOwner"), element("ul", { id: "gateway-events" }, ...notes)] : [],
    filters: [
      { name: "channel", label: "channel", choices: channelChoices(paid) },
      { name: "applied", label: "applied", choices: wordChoices(["yes", "no"]).map((c) => ({ ...c, value: c.value === "yes" ? "true" : "false" })) },
    ],
    columns: [
      { label: "person", value: (p) => person(p) },
      { label: "gateway", sort: "gateway", value: (p) => p.gateway === "telegram_stars" ? t("telegramStars") : titles[p.gateway] ?? p.gateway },
      { label: "reference", value: (p) => element("code", { dir: "ltr", text: p.order_reference }) },
      { label: "amount", sort: "amount_minor", value: (p) => money(p.amount, p.currency) },
      { label: "applied", value: (p) => t(p.applied ? "yes" : "no") + (p.flag ? ` (${t(p.flag)})` : "") + refundState(p) },
      { label: "paidAt", sort: "paid_at", value: (p) => when(p.paid_at) },
    ],
    // Stars are given back from here; a card payment in its gateway's dashboard.
    actions: (p) => may("admin") && p.gateway === "telegram_stars" && p.applied && !p.refund && !p.refund_request
      ? [actionButton("refundPayment", () => call("POST", `/v1/payments/${p.id}/refund`), { confirm: true })]
      : [],
  });
}

/**
 * The ledger against its history: each membership whose state is not the replay of its
 * payments and grants, as it is and as it should be; the owner writes the fixes.
 * @returns {Promise<Node[]>}
 */
export async function reconcile() {
  // billing (or botedge behind it) not answering is said on the page, not as a failed view.
  const [report, bots] = await Promise.all([call("GET", "/v1/reconcile").catch(() => null), everything("/v1/bots")]);
  if (!report) return [words("p", "reconcileDown", { id: "reconcile-down", class: "empty" })];
  const botName = (/** @type {number} */ id) => {
    const bot = bots.find((/** @type {any} */ b) => b.id === id);
    return bot?.username ? `\u2066@${bot.username}\u2069` : String(id);
  };
  const { checked, differences } = report.ledger;
  /** @param {string} label @param {string} text */
  const cell = (label, text) => element("td", { "data-label": t(label), text });
  const rows = differences.map((/** @type {any} */ d) => element("tr", { "data-person": String(d.person_id) },
    cell("telegramUser", idText(d.telegram_user_id)),
    cell("channel", d.title),
    cell("now", `${t(d.status)} · ${d.expires_at.startsWith("1970-01-01") ? t("none") : when(d.expires_at)}`),
    cell("byHistory", `${t(d.expected_status)} · ${d.expected_expires_at.startsWith("1970-01-01") ? t("none") : when(d.expected_expires_at)}`)));
  const head = ["telegramUser", "channel", "now", "byHistory"].map((key) => element("th", { scope: "col", text: t(key) }));
  /** Why a channel or a bot was not checked, in the page's language. @param {any} unchecked */
  const notChecked = (unchecked) => t("notChecked", { why: t(unchecked.reason === "refused" ? "uncheckedRefused" : "uncheckedUnavailable") });
  const channels = report.channels.map((/** @type {any} */ c) => element("li", { "data-channel": String(c.channel_id), ...(c.unchecked ? { class: "unchecked" } : {}) },
    element("strong", { text: c.title }), " ",
    c.unchecked
      ? notChecked(c.unchecked)
      : t("channelChecked", { checked: number(c.checked), intruders: number(c.intruders.length), missing: number(c.missing.length) }),
    ...(c.not_joined.length ? [" ", t("notJoinedYet", { count: number(c.not_joined.length) })] : []),
    ...(c.unreachable.length ? [" ", t("telegramSilent", { count: number(c.unreachable.length) })] : [])));
  const stars = report.stars.map((/** @type {any} */ b) => element("li", { "data-bot": String(b.bot_id), ...(b.unchecked ? { class: "unchecked" } : {}) },
    b.unchecked
      ? `${botName(b.bot_id)}: ${notChecked(b.unchecked)}`
      : t("starsChecked", { bot: botName(b.bot_id), checked: number(b.checked), here: number(b.missing_here.length), there: number(b.missing_there.length) })));
  const toFix = differences.length + report.channels.reduce(
    (/** @type {number} */ n, /** @type {any} */ c) => n + c.intruders.length + c.invite.length, 0)
    + report.stars.reduce((/** @type {number} */ n, /** @type {any} */ b) => n + b.missing_here.length, 0);
  return [
    words("h2", "ledgerHeading"),
    element("p", { id: "reconcile-checked", text: t("reconcileChecked", { count: number(checked) }) }),
    differences.length
      ? element("table", { id: "reconcile", class: "stacked" }, element("thead", {}, element("tr", {}, ...head)), element("tbody", {}, ...rows))
      : words("p", "reconcileClean", { id: "reconcile-clean", class: "empty" }),
    words("h2", "channelsHeading"),
    channels.length ? element("ul", { id: "reconcile-channels" }, ...channels) : words("p", "noChannelToAsk", { id: "reconcile-no-channels", class: "empty" }),
    words("h2", "starsHeading"),
    stars.length ? element("ul", { id: "reconcile-stars" }, ...stars) : words("p", "noBots", { class: "empty" }),
    ...(toFix && may("owner")
      ? [element("p", {}, actionButton("applyFixes", () => call("POST", "/v1/reconcile/fix"), { confirm: true }))]
      : []),
  ];
}

/** A payment given back, or on its way back. @param {any} p */
function refundState(p) {
  if (p.refund) return ` · ${t(p.refund === "chargeback" ? "chargedBack" : "refunded")} ${when(p.refunded_at)}`;
  if (p.refund_request === "failed") return ` · ${t("refundFailed")}`;
  if (p.refund_request) return ` · ${t("refundRequested")}`;
  return "";
}

/** @param {URL} url */
export function accessEvents(url) {
  return listView(url, {
    id: "access-events", path: "/v1/access-events",
    filters: [{ name: "state", label: "state", values: ["pending", "processing", "done", "failed"] }],
    columns: [
      { label: "kind", sort: "kind", value: (e) => t(e.kind) },
      { label: "person", value: (e) => person(e) },
      { label: "channel", value: (e) => e.channel_title },
      { label: "state", sort: "state", value: (e) => badge(e.state) },
      { label: "attempts", sort: "attempts", value: (e) => number(e.attempts) },
      { label: "lastError", value: (e) => e.last_error },
    ],
    actions: (e) => e.state === "failed" && may("admin")
      ? [actionButton("retry", () => call("POST", `/v1/access-events/${e.id}/retry`))] : [],
  });
}
