// @ts-check
// The dashboard: what needs the owner's eye as tiles that lead to it, and the revenue chart.
import { call, may, session } from "../api.js";
import { element, svg, words } from "../dom.js";
import { axisTicks, lastDays } from "../format.js";
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
    revenueChart(board.revenue, board.time_zone),
  ];
}

/**
 * One line per currency over the last 30 days of the workspace's zone, on a y axis with round
 * values; the legend and the figure's caption say the totals in words.
 * @param {{ day: string, currency: string, amount: string }[]} revenue
 * @param {string} timeZone
 */
function revenueChart(revenue, timeZone) {
  const days = lastDays(timeZone, new Date());
  const currencies = [...new Set(revenue.map((r) => r.currency))].sort();
  // As wide as the page has room for, so the axis labels stay at their size on a phone.
  const room = document.getElementById("view")?.clientWidth ?? 640;
  const width = Math.max(300, Math.min(640, room - 32)), height = 260, left = 56, right = 16, top = 16, bottom = 36;
  /** @type {Record<string, number>} */
  const amounts = {};
  for (const r of revenue) amounts[`${r.currency} ${r.day}`] = Number(r.amount);
  const ticks = axisTicks(Math.max(0, ...revenue.map((r) => Number(r.amount))));
  const highest = ticks[ticks.length - 1];
  /** @param {number} n */
  const x = (n) => left + (n * (width - left - right)) / (days.length - 1);
  /** @param {number} v */
  const y = (v) => height - bottom - (v * (height - top - bottom)) / highest;
  const chart = svg("svg", { id: "revenue", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": "revenue-heading revenue-summary" });
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
  /** @type {string[]} */
  const said = [];
  currencies.forEach((currency, index) => {
    const colour = COLOURS[index % COLOURS.length];
    const values = days.map((d) => amounts[`${currency} ${d}`] ?? 0);
    chart.append(svg("polyline", {
      points: values.map((v, n) => `${x(n).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
      fill: "none", stroke: colour, "stroke-width": 2, "data-currency": currency,
    }));
    const total = revenue.filter((r) => r.currency === currency).reduce((sum, r) => sum + Number(r.amount), 0);
    const digits = revenue.find((r) => r.currency === currency)?.amount.split(".")[1]?.length ?? 0;
    const text = `${currency}: ${money(total.toFixed(digits), currency)}`;
    said.push(text);
    const swatch = svg("svg", { width: 12, height: 12, "aria-hidden": "true" });
    swatch.append(svg("rect", { width: 12, height: 12, fill: colour }));
    legend.append(element("li", { "data-currency": currency }, swatch, element("span", { text })));
  });
  if (!currencies.length) legend.append(words("li", "noRevenue"));
  const summary = element("figcaption", { id: "revenue-summary", class: "hidden-label",
    text: currencies.length ? `${day(days[0])} – ${day(days[days.length - 1])}: ${said.join(", ")}` : t("noRevenue") });
  return element("figure", { class: "chart" }, chart, legend, summary);
}
