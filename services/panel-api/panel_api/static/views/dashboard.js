// @ts-check
// The dashboard: what needs the owner's eye as tiles that lead to it, and the revenue chart.
import { call, may, session } from "../api.js";
import { element, words } from "../dom.js";
import { lastDays, roundedTo } from "../format.js";
import { dateTime, day, money, number, t } from "../i18n.js";
import { lineChart } from "./charts.js";
import { funnelOf, seriesChart } from "./stats.js";

/** @param {string} key @param {number} value @param {string} href */
function tile(key, value, href) {
  return element("a", { class: "tile", href, "data-tile": key },
    words("div", key),
    element("div", { class: "figure", "data-figure": key, "data-value": String(value), text: number(value) }));
}

/** @returns {Promise<Node[]>} */
export async function dashboard() {
  const [board, visits] = await Promise.all([call("GET", "/v1/dashboard"), call("GET", "/v1/stats")]);
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

// Coins kept to 6 places are shown to 2 in the totals; the chart has them exact.
const COINS = new Set(["USDT", "TRX"]);

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
