// @ts-check
// A page over one of the API's lists: a filter or a sort is a query parameter kept in the
// address, and "More" follows the answer's cursor, so a long list is never loaded whole.
import { call, download, may } from "./api.js";
import { element, show, wordChoices, words } from "./dom.js";
import { number, t } from "./i18n.js";
import { navigate } from "./router.js";

/**
 * @typedef {object} Column
 * @property {string} label the key of its heading
 * @property {string} [sort] the API's sort value, when the list sorts by it
 * @property {(item: any) => Node | string | null | undefined} value
 */

/**
 * @typedef {object} Filter
 * @property {string} name the query parameter
 * @property {string} label
 * @property {string[]} [values] each a key of words
 * @property {Array<{ value: string, text: string }>} [choices] values with their text as it is
 *   (a channel's title)
 */

/**
 * @typedef {object} List
 * @property {string} id
 * @property {string} path the API's list, without a query
 * @property {Column[]} columns
 * @property {Filter[]} [filters]
 * @property {boolean} [search] a box to find a person by id, username or name (`q`)
 * @property {string} [csv] the API's CSV export of the list, offered to admins with the
 *   list's filters and sort
 * @property {((item: any) => Node[]) | null} [actions]
 * @property {((item: any) => string) | null} [select] a box on each row to choose it by this
 *   value (for an action on the chosen), and one in the heading for the whole page; with more
 *   pages behind it, that one offers every row matching the filter (up to `MATCHING`)
 * @property {Node[]} [before]
 * @property {Node[]} [after]
 * @property {Record<string, string>} [fixed] query parameters the list always has (a detail
 *   page's own: one person's memberships)
 */

/** The most rows "choose all that match" loads into the table, to be seen before acting. */
export const MATCHING = 2000;

/** @param {Node | string | null | undefined} content @param {string} label */
function cell(content, label) {
  if (content instanceof Node) return element("td", { "data-label": label }, content);
  return element("td", { "data-label": label, text: content ?? t("none") });
}

// A sortable column's heading is a button: the first press sorts by it ascending, the next
// descending. The API sorts, so "More" goes on in the same order.
/** @param {Column} column @param {string | null} sort */
function heading(column, sort) {
  const label = words("span", column.label);
  if (!column.sort) return element("th", { scope: "col" }, label);
  const state = sort === column.sort ? "ascending" : sort === "-" + column.sort ? "descending" : null;
  const arrow = element("span", { class: "arrow", "aria-hidden": "true", text: state === "ascending" ? "▲" : state === "descending" ? "▼" : "" });
  const button = element("button", { type: "button", class: "sort", "data-sort": column.sort }, label, arrow);
  const next = state === "ascending" ? "-" + column.sort : column.sort;
  button.addEventListener("click", () => navigate({ sort: next }));
  return element("th", { scope: "col", ...(state ? { "aria-sort": state } : {}) }, button);
}

/** @param {URL} url @param {List} list @returns {Promise<Node[]>} */
export async function listView(url, { id, path, columns, filters = [], search = false, csv, actions = null, select = null, before = [], after = [], fixed = {} }) {
  const wanted = url.searchParams;
  const query = new URLSearchParams({ limit: "50", ...fixed });
  const sort = wanted.get("sort");
  if (sort) query.set("sort", sort);
  const controls = [];
  for (const filter of filters) {
    const select = /** @type {HTMLSelectElement} */ (element("select", { name: filter.name, "data-filter": filter.name },
      element("option", { value: "", text: t("all") }),
      ...(filter.choices ?? wordChoices(filter.values ?? []))
        .map((choice) => element("option", { value: choice.value, text: choice.text }))));
    select.value = wanted.get(filter.name) || "";
    if (select.value) query.set(filter.name, select.value);
    select.addEventListener("change", () => navigate({ [filter.name]: select.value }));
    controls.push(element("label", {}, words("span", filter.label), select));
  }
  if (search) {
    const box = /** @type {HTMLInputElement} */ (element("input", { type: "search", name: "q", id: `${id}-q`, autocomplete: "off" }));
    box.value = wanted.get("q") ?? "";
    if (box.value) query.set("q", box.value);
    const find = element("form", { class: "search", role: "search" },
      words("label", "findPerson", { for: box.id }), element("span", { class: "search-row" }, box, words("button", "search", { type: "submit" })));
    find.addEventListener("submit", (event) => {
      event.preventDefault();
      navigate({ q: box.value.trim() });
    });
    controls.unshift(find);
  }
  if (csv && may("admin")) {
    const wanted = new URLSearchParams([...query].filter(([name]) => name !== "limit"));
    const button = words("button", "exportCsv", { type: "button", id: `${id}-csv` });
    button.addEventListener("click", async () => {
      button.setAttribute("disabled", "");
      try { await download(`${csv}?${wanted}`); } catch (error) { show(error); }
      button.removeAttribute("disabled");
    });
    controls.push(button);
  }
  const body = element("tbody");
  const head = columns.map((column) => heading(column, sort));
  // With every shown row chosen and more behind them: an offer to load and choose all that
  // match the filter, then how many are chosen.
  const matching = element("p", { id: `${id}-matching`, class: "matching", hidden: "", tabindex: "-1", "aria-live": "polite" });
  /** @type {HTMLInputElement | null} */
  let all = null;
  if (select) {
    const box = /** @type {HTMLInputElement} */ (element("input", { type: "checkbox", "data-select-all": "", "aria-label": t("chooseAll") }));
    all = box;
    box.addEventListener("change", () => {
      for (const row of body.querySelectorAll("input[data-select]")) /** @type {HTMLInputElement} */ (row).checked = box.checked;
      offer();
    });
    head.unshift(element("th", { scope: "col" }, box));
  }
  if (actions) head.push(element("th", { scope: "col" }, element("span", { class: "hidden-label", text: t("action") })));
  const table = element("table", { id, class: "stacked" }, element("thead", {}, element("tr", {}, ...head)), body);
  const more = words("button", "more", { type: "button", id: `${id}-more`, hidden: "" });
  /** @type {string | null} */
  let cursor = null;
  const load = async () => {
    if (cursor) query.set("cursor", cursor);
    const page = await call("GET", `${path}?${query}`);
    for (const item of page.items) {
      const row = element("tr", { "data-id": String(item.id ?? "") },
        ...columns.map((column) => cell(column.value(item), t(column.label))));
      if (select) {
        const box = element("input", { type: "checkbox", "data-select": "", value: select(item), "aria-label": t("chooseRow") });
        row.prepend(element("td", { "data-label": t("chosen") }, box));
      }
      // The flex box inside the cell: a td that is a flex box leaves the table.
      if (actions) row.append(element("td", { "data-label": t("action") }, element("div", { class: "actions" }, ...actions(item))));
      body.append(row);
    }
    cursor = page.next_cursor;
    more.hidden = !cursor;
  };
  const chooseRest = words("button", "chooseMatching", { type: "button", id: `${id}-choose-matching` });
  /** Says what "choose all" chose, and offers the rest while more pages match. */
  function offer() {
    const shown = body.querySelectorAll("input[data-select]").length;
    if (!all?.checked || (!cursor && !matching.dataset.loaded)) {
      matching.hidden = true;
      return;
    }
    const count = { count: number(shown) };
    if (cursor && shown < MATCHING) matching.replaceChildren(element("span", { text: t("chosenShown", count) }), " ", chooseRest);
    else if (cursor) matching.replaceChildren(element("span", { text: t("chosenAtMost", count) }));
    else matching.replaceChildren(element("span", { text: t("chosenMatching", count) }));
    matching.hidden = false;
  }
  chooseRest.addEventListener("click", async () => {
    chooseRest.setAttribute("disabled", "");
    try {
      while (cursor && body.children.length < MATCHING) await load();
      for (const row of body.querySelectorAll("input[data-select]")) /** @type {HTMLInputElement} */ (row).checked = true;
      matching.dataset.loaded = "true";
      offer();
      matching.focus();
    } catch (error) {
      chooseRest.removeAttribute("disabled");
      show(error);
    }
  });
  more.addEventListener("click", async () => {
    try { await load(); } catch (error) { show(error); }
  });
  await load();
  const empty = body.children.length ? [] : [words("p", "nothing", { class: "empty" })];
  return [...before,
    ...(controls.length ? [element("div", { class: "filters" }, ...controls)] : []),
    ...(select ? [matching] : []),
    element("div", { class: "table-box" }, table), ...empty, more, ...after];
}
