// @ts-check
// Charts the views share: lines over days (or hours) on a round y axis, with a legend and a
// caption that says the totals in words.
import { element, svg, words } from "../dom.js";
import { axisTicks } from "../format.js";
import { day, number, t } from "../i18n.js";

export const COLOURS = ["#2456c8", "#c8242f", "#1f8a4c", "#b8860b", "#6b3fa0"];

// About the widest a character of a 12 px label draws, digits and letters of either script.
const LABEL_CHAR_WIDTH = 7.5;

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
 * @param {(slot: string) => string} [labelOf] how a slot is named on the axis and in the
 *   caption (a day, unless told: an hour)
 * @param {number} [most] the widest it is drawn (one of several side by side)
 */
export function lineChart(id, headingId, days, lines, emptyKey, labelOf = day, most = 640) {
  // As wide as the page has room for, so the axis labels stay at their size on a phone.
  const room = Math.min(most + 32, document.getElementById("view")?.clientWidth ?? 640);
  const width = Math.max(300, Math.min(640, room - 32)), height = 260, left = 56, right = 16, top = 16, bottom = 36;
  const ticks = axisTicks(Math.max(0, ...lines.flatMap((line) => line.values)));
  const highest = ticks[ticks.length - 1];
  /** @param {number} n */
  const x = (n) => left + (n * (width - left - right)) / Math.max(1, days.length - 1);
  /** @param {number} v */
  const y = (v) => height - bottom - (v * (height - top - bottom)) / highest;
  const chart = svg("svg", { id, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": `${headingId} ${id}-summary` });
  for (const value of ticks) {
    chart.append(svg("line", { x1: left, y1: y(value), x2: width - right, y2: y(value), stroke: value ? "#e3e6ea" : "#9aa3b2" }));
    const label = svg("text", { x: left - 6, y: y(value) + 4, "font-size": 12, "text-anchor": "end", class: "tick" });
    label.textContent = number(value);
    chart.append(label);
  }
  // Labels far enough apart not to touch: an hour's ("7 Dec, 14:00") is wider than a day's.
  const labels = days.map((point) => labelOf(point));
  const widest = Math.max(0, ...labels.map((text) => text.length)) * LABEL_CHAR_WIDTH + 12;
  const spacing = (width - left - right) / Math.max(1, days.length - 1);
  const every = Math.max(1, Math.ceil(widest / spacing));
  for (let n = 0; n < days.length; n += every) {
    const label = svg("text", { x: x(n), y: height - 12, "font-size": 12, "text-anchor": "middle", class: "day" });
    label.textContent = labels[n];
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
    text: lines.length ? `${labelOf(days[0])} – ${labelOf(days[days.length - 1])}: ${said}` : t(emptyKey) });
  return element("figure", { class: "chart" }, chart, legend, summary);
}
