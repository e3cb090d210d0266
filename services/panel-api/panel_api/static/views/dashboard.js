// @ts-check
// The dashboard: what needs the owner's eye as tiles that lead to it, and the revenue chart.
import { call, may, session } from "../api.js";
import { element, svg, words } from "../dom.js";
import { axisTicks, lastDays, sumDecimals } from "../format.js";
import { day, money, number, t } from "../i18n.js";

const COLOURS = ["#2456c8", "#c8242f", "#1f8a4c", "#b8860b", "#6b3fa0"];

/** @param {string} key @param {number} value @param {string} href */
function tile(key, value, href) {
  return element("a", { class: "tile", href, "data-tile": key },
    words("div", key),
    element("div", { class: "figure", "data-figure": key, "data-value": String(value), text: number(value) }));
}

/** @returns {Promise<Node[]>} */
export async function dashboard() {
  const board = await call("GET", "/v1/dashboard");
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
    element("div", { class: "tiles" },
      ...tiles.filter(([, , , role]) => may(role)).map(([key, value, href]) => tile(key, value, href))),
    words("h2", "revenue", { id: "revenue-heading" }),
    revenueChart(board.revenue, days),
    words("h2", "members", { id: "members-heading" }),
    membersChart(board.members, days),
  ];
}

/**
 * @typedef {object} Line
 * @property {string} name what the legend and the caption call it
 * @property {string} key its data-series value
 * @property {number[]} values one per day
 * @property {string} total what the legend says beside its name
 */

/**
 * A line chart over `days` on a y axis with round values, with a legend and a caption that say
 * the totals in words (the chart's text alternative).
 * @param {string} id @param {string} headingId @param {string[]} days @param {Line[]} lines
 * @param {string} emptyKey what the legend says when there is no line
 */
export function lineChart(id, headingId, days, lines, emptyKey) {
  // As wide as the page has room for, so the axis labels stay at their size on a phone.
  const room = document.getElementById("view")?.clientWidth ?? 640;
  const width = Math.max(300, Math.min(640, room - 32)), height = 260, left = 56, right = 16, top = 16, bottom = 36;
  const ticks = axisTicks(Math.max(0, ...lines.flatMap((line) => line.values)));
  const highest = ticks[ticks.length - 1];
  /** @param {number} n */
  const x = (n) => left + (n * (width - left - right)) / (days.length - 1);
  /** @param {number} v */
  const y = (v) => height - bottom - (v * (height - top - bottom)) / highest;
  const chart = svg("svg", { id, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": `${headingId} ${id}-summary` });
  for (const value of ticks) {
    chart.append(svg("line", { x1: left, y1: y(value), x2: width - right, y2: y(value), stroke: value ? "#e3e6ea" : "#9aa3b2" }));
    const label = svg("text", { x: left - 6, y: y(value) + 4, "font-size": 12, "text-anchor": "end", class: "tick" });
    label.textContent = number(value);
    chart.append(label);
  }
  const every = width < 480 ? 10 : 7;
  for (let n = 0; n < days.length; n += every) {
    const label = svg("text", { x: x(n), y: height - 12, "font-size": 12, "text-anchor": "middle", class: "day" });
    label.textContent = day(days[n]);
    chart.append(label);
  }
  const legend = element("ul", { class: "legend" });
  lines.forEach((line, index) => {
    const colour = COLOURS[index % COLOURS.length];
    chart.append(svg("polyline", {
      points: line.values.map((v, n) => `${x(n).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
      fill: "none", stroke: colour, "stroke-width": 2, "data-series": line.key,
    }));
    const swatch = svg("svg", { width: 12, height: 12, "aria-hidden": "true" });
    swatch.append(svg("rect", { width: 12, height: 12, fill: colour }));
    legend.append(element("li", { "data-series": line.key }, swatch, element("span", { text: `${line.name}: ${line.total}` })));
  });
  if (!lines.length) legend.append(words("li", emptyKey));
  const said = lines.map((line) => `${line.name}: ${line.total}`).join(", ");
  const summary = element("figcaption", { id: `${id}-summary`, class: "hidden-label",
    text: lines.length ? `${day(days[0])} – ${day(days[days.length - 1])}: ${said}` : t(emptyKey) });
  return element("figure", { class: "chart" }, chart, legend, summary);
}

/**
 * One line per currency over the last 30 days of the workspace's zone; the legend says each
 * currency's total.
 * @param {{ day: string, currency: string, amount: string }[]} revenue
 * @param {string[]} days
 */
function revenueChart(revenue, days) {
  const currencies = [...new Set(revenue.map((r) => r.currency))].sort();
  /** @type {Record<string, number>} */
  const amounts = {};
  for (const r of revenue) amounts[`${r.currency} ${r.day}`] = Number(r.amount);
  return lineChart("revenue", "revenue-heading", days, currencies.map((currency) => ({
    name: currency, key: currency,
    values: days.map((d) => amounts[`${currency} ${d}`] ?? 0),
    total: money(sumDecimals(revenue.filter((r) => r.currency === currency).map((r) => r.amount)), currency),
  })), "noRevenue");
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
