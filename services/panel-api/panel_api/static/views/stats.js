// @ts-check
// Statistics: the funnel from /start to content delivered, new people, blocks, joins per campaign
// and revenue over a range of days, with a chart per hour or day and the series as CSV.
import { call, download } from "../api.js";
import { element, show, words } from "../dom.js";
import { formOf } from "../forms.js";
import { day, money, number, percent, t } from "../i18n.js";
import { navigate } from "../router.js";
import { lineChart } from "./charts.js";
import { botChoices, everything, when } from "./common.js";

const FUNNEL = ["start", "gate_shown", "gate_passed", "content_delivered"];
const LINES = [...FUNNEL, "new_person"];
const FILTERS = ["from", "to", "granularity", "bot_id", "content_id", "campaign_id"];

/**
 * The funnel as steps, each with its count and its share of the step before.
 * @param {{ funnel: Record<string, number> }} stats
 */
export function funnelOf(stats) {
  const steps = element("ol", { class: "funnel", id: "funnel" });
  FUNNEL.forEach((key, n) => {
    const value = stats.funnel[key];
    const before = n ? stats.funnel[FUNNEL[n - 1]] : 0;
    const share = n && before ? ` (${percent(Math.round((100 * value) / before) / 100)})` : "";
    const widest = Math.max(1, ...FUNNEL.map((k) => stats.funnel[k]));
    const bar = element("span", { class: "bar" });
    // Through the CSSOM: the page's CSP refuses a style attribute.
    bar.style.inlineSize = `${(100 * value) / widest}%`;
    steps.append(element("li", { "data-step": key },
      words("span", `funnel.${key}`, { class: "step" }), bar,
      element("span", { class: "count", "data-figure": key, text: number(value) + share })));
  });
  return steps;
}

/**
 * The series as lines: the funnel's steps and new people, per hour or day.
 * @param {any} stats @param {string} id @param {string} headingId
 */
export function seriesChart(stats, id, headingId) {
  const slots = stats.series.map((/** @type {{ at: string }} */ p) => p.at);
  const lines = LINES.map((key) => {
    /** @type {number[]} */
    const values = stats.series.map((/** @type {Record<string, number>} */ p) => p[key]);
    return { name: t(`funnel.${key}`), key, values, total: number(values.reduce((a, b) => a + b, 0)) };
  }).filter((line) => line.values.some(Boolean));
  return lineChart(id, headingId, slots, lines, "noVisitors",
    stats.granularity === "hour" ? (slot) => when(slot) ?? slot : undefined);
}

/** @param {URL} url */
export async function stats(url) {
  const asked = new URLSearchParams();
  for (const name of FILTERS) {
    const value = url.searchParams.get(name);
    if (value) asked.set(name, value);
  }
  const [found, bots, campaigns, contents] = await Promise.all([
    call("GET", `/v1/stats?${asked}`),
    everything("/v1/bots"), everything("/v1/campaigns"), everything("/v1/contents"),
  ]);
  const any = { value: "", text: t("all") };
  const form = formOf("stats-range", [
    { name: "from", label: "rangeFrom", type: "date", value: found.from },
    { name: "to", label: "rangeTo", type: "date", value: found.to },
    { name: "granularity", label: "granularity", options: ["byDay", "byHour"], value: found.granularity === "hour" ? "byHour" : "byDay" },
    { name: "bot_id", label: "bot", choices: [any, ...botChoices(bots, { removed: true })], value: asked.get("bot_id") ?? "" },
    { name: "campaign_id", label: "campaign", choices: [any, ...campaigns.map((c) => ({ value: String(c.id), text: c.name }))], value: asked.get("campaign_id") ?? "" },
    { name: "content_id", label: "contentItem", choices: [any, ...contents.map((c) => ({ value: String(c.id), text: c.code }))], value: asked.get("content_id") ?? "" },
  ], "showStats", async (v) => {
    // Asked first, so a refused range is shown at its field; then the page follows.
    const wanted = Object.fromEntries(FILTERS.map((name) => [name, v[name] ?? ""]));
    wanted.granularity = v.granularity === "byHour" ? "hour" : "day";
    await call("GET", `/v1/stats?${new URLSearchParams(Object.entries(wanted).filter(([, x]) => x))}`);
    navigate(wanted);
  }, { then: async () => {} });
  // It only reads: a viewer's page has it too.
  form.setAttribute("data-reads", "");
  const csv = words("button", "exportCsv", { type: "button", id: "stats-csv" });
  csv.addEventListener("click", () => download(`/v1/stats.csv?${asked}`).catch(show));
  const revenue = found.revenue.length
    ? element("ul", { id: "stats-revenue" }, ...found.revenue.map((/** @type {any} */ r) => element("li", { "data-currency": r.currency },
      element("span", { text: money(r.amount, r.currency) }), " ", element("span", { text: t("payments.count", { count: number(r.payments) }) }))))
    : words("p", "noPaymentsInRange", { id: "stats-revenue" });
  const joins = found.campaigns.length
    ? element("table", { id: "stats-campaigns" },
      element("thead", {}, element("tr", {}, words("th", "campaign"), words("th", "joins"), words("th", "leaves"))),
      element("tbody", {}, ...found.campaigns.map((/** @type {any} */ c) => element("tr", {},
        element("td", {}, element("a", { href: `/campaigns/${c.campaign_id}`, text: c.name })),
        element("td", { "data-figure": "joins", text: number(c.joins) }),
        element("td", { "data-figure": "leaves", text: number(c.leaves) })))))
    : words("p", "noCampaignsYet", { id: "stats-campaigns" });
  return [
    form,
    element("p", { class: "range" }, element("span", { id: "stats-range-said", text: t("statsRange", { from: day(found.from), to: day(found.to), zone: found.zone }) })),
    words("h2", "funnel", { id: "funnel-heading" }), funnelOf(found),
    element("div", { class: "tiles" },
      element("div", { class: "tile" }, words("div", "newPeople"), element("div", { class: "figure", "data-figure": "new_people", text: number(found.new_people) })),
      element("div", { class: "tile" }, words("div", "blockedBot"), element("div", { class: "figure", "data-figure": "blocked", text: number(found.blocked) }))),
    words("h2", "statsSeries", { id: "stats-series-heading" }), seriesChart(found, "stats-series", "stats-series-heading"),
    element("p", {}, csv),
    words("h2", "revenueByCurrency"), revenue,
    words("h2", "campaigns"), joins,
  ];
}
