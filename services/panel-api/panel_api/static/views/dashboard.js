// @ts-check
// The dashboard: what needs the owner's eye as tiles that lead to it, and the revenue chart.
import { call, may, session } from "../api.js";
import { element, words } from "../dom.js";
import { COINS, lastDays, roundedTo } from "../format.js";
import { dateTime, day, money, number, percent, t } from "../i18n.js";
import { navigate } from "../router.js";
import { lineChart } from "./charts.js";
import { funnelOf, seriesChart } from "./stats.js";

/** @param {string} key @param {number} value @param {string} href */
function tile(key, value, href) {
  return element("a", { class: "tile", href, "data-tile": key },
    words("div", key),
    element("div", { class: "figure", "data-figure": key, "data-value": String(value), text: number(value) }));
}

const PERIODS = ["7", "30", "90", "month"];

/**
 * A figure of the period beside the one before it: the figure, then what it was and by how
 * much it moved, in words (not colour alone).
 * @param {string} key @param {string} shown @param {{ now: number, before: number }} change
 * @param {string} [href]
 */
function headline(key, shown, change, href) {
  const moved = change.now - change.before;
  const arrow = moved > 0 ? "▲" : moved < 0 ? "▼" : "";
  const attributes = { class: "tile headline", "data-headline": key, ...(href ? { href } : {}) };
  return element(href ? "a" : "div", attributes,
    words("div", `hl.${key}`),
    element("div", { class: "figure", "data-figure": key, text: shown }),
    element("div", { class: "before", "data-before": key },
      element("span", { "aria-hidden": "true", text: arrow ? `${arrow} ` : "" }),
      element("span", { text: t(moved > 0 ? "hl.up" : moved < 0 ? "hl.down" : "hl.same", {
        by: number(Math.abs(moved)), before: number(change.before) }) })));
}

/**
 * Amounts per currency, one line each, beside the period before's (or, with `was`
 * "hl.atStart", the figure at the period's start).
 * @param {string} key @param {any[]} now @param {any[]} before @param {string} [was]
 */
function moneyHeadline(key, now, before, was = "hl.was") {
  const earlier = new Map(before.map((b) => [b.currency, b]));
  const lines = now.filter((r) => r.amount_minor !== "0").map((r) => element("div", { class: "figure-line", "data-currency": r.currency },
    element("span", { class: "figure", text: money(r.amount, r.currency) }),
    element("span", { class: "before", text: ` ${t(was, { before: money(earlier.get(r.currency)?.amount ?? "0", r.currency) })}` })));
  return element("div", { class: "tile headline", "data-headline": key },
    words("div", `hl.${key}`), ...(lines.length ? lines : [words("div", "hl.none", { class: "figure" })]));
}

/**
 * Telegram Stars apart: what subscriptions brought (Telegram charges them again by itself) and
 * what one-off payments did, each beside the period before's; none when neither period had any.
 * @param {{ subscriptions: { now: number, before: number }, one_off: { now: number, before: number } }} stars
 */
function starsHeadline(stars) {
  const { subscriptions, one_off: once } = stars;
  if (!subscriptions.now && !subscriptions.before && !once.now && !once.before) return [];
  const line = (/** @type {string} */ key, /** @type {{ now: number, before: number }} */ c) =>
    element("div", { class: "figure-line", "data-stars": key },
      words("span", `hl.${key}`), " ",
      element("span", { class: "figure", text: money(String(c.now), "XTR") }),
      element("span", { class: "before", text: ` ${t("hl.was", { before: money(String(c.before), "XTR") })}` }));
  return [element("div", { class: "tile headline", "data-headline": "stars" },
    words("div", "hl.stars"), line("starsSubscriptions", subscriptions), line("starsOneOff", once))];
}

/** The business over the chosen period: the figures an owner checks each morning.
 * @param {any} h */
function headlines(h) {
  const share = (/** @type {number} */ paid, /** @type {number} */ ended) => ended ? percent(paid / ended) : "—";
  const trials = element("div", { class: "tile headline", "data-headline": "trials" },
    words("div", "hl.trials"),
    element("div", { class: "figure", "data-figure": "trials", text: share(h.trials_paid.now, h.trials_ended.now) }),
    element("div", { class: "before", text: t("hl.trialsOf", {
      paid: number(h.trials_paid.now), ended: number(h.trials_ended.now), before: share(h.trials_paid.before, h.trials_ended.before) }) }));
  return element("div", { class: "tiles headlines" },
    moneyHeadline("recurring", h.recurring, h.recurring_before, "hl.atStart"),
    moneyHeadline("received", h.received, h.received_before),
    ...starsHeadline(h.stars),
    headline("active", number(h.active.now), h.active, "/memberships?status=active"),
    headline("new", number(h.new.now), h.new),
    headline("lost", number(h.lost.now), h.lost, "/memberships?status=expired"),
    element("a", { class: "tile headline", "data-headline": "renewals", href: "/memberships?status=active" },
      words("div", "hl.renewals"), element("div", { class: "figure", "data-figure": "renewals", text: number(h.renewals_due) })),
    trials);
}

/**
 * The period's payments by channel or by plan: what each brought, in how many payments.
 * @param {string} id @param {string} heading @param {string} what the key of its first column's
 *   heading @param {any[]} items @param {(item: any) => string} name
 */
function revenueTable(id, heading, what, items, name) {
  const head = element("tr", {}, ...[what, "hl.amount", "hl.payments"].map((k) => words("th", k, { scope: "col" })));
  const body = items.map((r) => element("tr", { "data-currency": r.currency },
    element("td", { "data-label": t(what) }, element("bdi", { text: name(r) })),
    element("td", { "data-label": t("hl.amount"), text: money(r.amount, r.currency) }),
    element("td", { "data-label": t("hl.payments"), text: number(r.payments) })));
  return element("section", { class: "revenue-table", "aria-labelledby": `${id}-heading` },
    words("h3", heading, { id: `${id}-heading` }),
    items.length
      ? element("div", { class: "table-box" }, element("table", { id, class: "stacked" }, element("thead", {}, head), element("tbody", {}, ...body)))
      : words("p", "hl.none", { class: "empty" }));
}

/** @param {URL} url @returns {Promise<Node[]>} */
export async function dashboard(url) {
  const period = PERIODS.includes(url.searchParams.get("period") ?? "") ? String(url.searchParams.get("period")) : "30";
  const [board, visits, h] = await Promise.all([
    call("GET", "/v1/dashboard"), call("GET", "/v1/stats"), call("GET", `/v1/dashboard/headlines?period=${period}`)]);
  const picker = /** @type {HTMLSelectElement} */ (element("select", { id: "period", name: "period" },
    ...PERIODS.map((p) => element("option", { value: p, text: t(`period.${p}`) }))));
  picker.value = period;
  picker.addEventListener("change", () => navigate({ period: picker.value === "30" ? null : picker.value }));
  const days = lastDays(board.time_zone, new Date());
  const me = session.me ?? { email: "", role: "viewer" };
  /** @type {[string, number, string, string][]} key, figure, where it leads, who may open it */
  const tiles = [
    ["membersActive", board.members_active, "/memberships?status=active", "viewer"],
    ["membersGrace", board.members_grace, "/memberships?status=grace", "viewer"],
    ["ordersWaiting", board.ad_orders_waiting, "/orders?status=requested", "viewer"],
    ["accessFailing", board.access_events_failing, "/access-events?state=failed", "viewer"],
    ["deadUpdates", board.dead_updates, "/dead-updates", "admin"],
    ["botProblems", board.bots_with_problems, "/bots", "viewer"],
  ];
  return [
    element("p", { id: "who", text: t("signedInAs", { email: me.email, role: t(me.role) }) }),
    element("div", { class: "section-head" },
      words("h2", "hl.heading", { id: "business-heading" }),
      element("label", { for: "period" }, words("span", "hl.period"), " ", picker)),
    headlines(h),
    element("div", { class: "charts" },
      revenueTable("by-channel", "hl.byChannel", "channel", h.by_channel, (r) => r.title),
      revenueTable("by-plan", "hl.byPlan", "plan", h.by_plan, (r) => `${r.name} · ${r.channel_title}`)),
    words("h2", "hl.needsYou"),
    ...board.outages.map((/** @type {{ bot_id: number, username: string, since: string }} */ o) =>
      element("p", { class: "warning", role: "alert", "data-outage": String(o.bot_id) },
        element("a", { href: "/bots", text: t("telegramDown", {
          // Isolated, so a Latin name keeps its place in a Persian sentence.
          bot: `\u2068${o.username ? `@${o.username}` : `#${number(o.bot_id)}`}\u2069`,
          since: dateTime(o.since, board.time_zone),
        }) }))),
    element("div", { class: "tiles" },
      ...tiles.filter(([, , , role]) => may(role)).map(([key, value, href]) => tile(key, value, href))),
    words("h2", "visitors30", { id: "visitors-heading" }),
    funnelOf(visits),
    seriesChart(visits, "visitors", "visitors-heading"),
    element("p", {}, words("a", "stats", { href: "/stats" })),
    words("h2", "revenue", { id: "revenue-heading" }),
    revenueCharts(board.revenue, board.revenue_totals, days),
    words("h2", "members", { id: "members-heading" }),
    membersChart(board.members, days),
  ];
}

// Coins (kept to 6 places) are shown to 2 in the totals; the chart has them exact.

/**
 * A small chart per currency over the last 30 days of the workspace's zone, each on its own
 * scale (250 Stars beside $105 would flatten the dollars to the floor); each says its total,
 * summed by the API.
 * @param {{ day: string, currency: string, amount: string }[]} revenue
 * @param {{ currency: string, amount: string }[]} totals
 * @param {string[]} days
 */
function revenueCharts(revenue, totals, days) {
  /** @type {Record<string, number>} */
  const amounts = {};
  for (const r of revenue) amounts[`${r.currency} ${r.day}`] = Number(r.amount);
  const charts = totals.map(({ currency, amount }) => {
    const total = money(COINS.has(currency) ? roundedTo(amount, 2) : amount, currency);
    const id = `revenue-${currency}`;
    return element("div", { class: "small-chart", "data-currency": currency },
      element("h3", { id: `${id}-heading`, text: currency }),
      lineChart(id, `${id}-heading`, days, [{
        name: currency, key: currency, values: days.map((d) => amounts[`${currency} ${d}`] ?? 0), total,
      }], "noRevenue", day, totals.length > 1 ? 420 : 640));
  });
  return element("div", { id: "revenue", class: "charts" },
    ...(charts.length ? charts : [words("p", "noRevenue", { class: "empty" })]));
}

/**
 * Members active and in grace at the end of each day; the legend says today's figures.
 * @param {{ day: string, active: number, grace: number }[]} members
 * @param {string[]} days
 */
function membersChart(members, days) {
  const byDay = new Map(members.map((m) => [m.day, m]));
  /** @param {"active" | "grace"} status */
  const line = (status) => {
    const values = days.map((d) => byDay.get(d)?.[status] ?? 0);
    return { name: t(`${status}Members`), key: status, values, total: t("today", { count: number(values[values.length - 1]) }) };
  };
  const lines = members.some((m) => m.active || m.grace) ? [line("active"), line("grace")] : [];
  return lineChart("members", "members-heading", days, lines, "noMembers");
}
