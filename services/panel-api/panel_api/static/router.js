// @ts-check
// Views by address. A view is drawn off the page and shown whole once its data is in: only then
// do the address and the highlighted link change. While it loads an indicator shows; when it
// fails the page that was there stays, with the reason above it.
import { SessionEnded } from "./api.js";
import { byId, element, show, words } from "./dom.js";
import { t } from "./i18n.js";

/**
 * @typedef {object} View
 * @property {string} title the key of its heading and of its link
 * @property {(url: URL, id: number) => Promise<Node[]>} render `id`: the number a path such as
 *   `/channels/:id` names (0 for a path without one)
 */

/** @type {{ pattern: RegExp, view: View }[]} */
const views = [];

/** @type {(url: URL) => Promise<void>} */
let before = async () => {};

/** @param {string} path `/channels` or `/channels/:id` @param {View} view */
export function route(path, view) {
  views.push({ pattern: new RegExp(`^${path.replace(":id", "([1-9][0-9]{0,17})")}$`), view });
}

/** The view at `path` and the id it names. @param {string} path @returns {[View, number]} */
function viewAt(path) {
  for (const { pattern, view } of views) {
    const found = pattern.exec(path);
    if (found) return [view, Number(found[1] ?? 0)];
  }
  return [NOT_FOUND, 0];
}

/** What runs before any view is drawn (loading who is signed in). @param {(url: URL) => Promise<void>} run */
export function beforeEach(run) {
  before = run;
}

/** @type {() => void} */
let after = () => {};

/** What runs once a view is drawn (the counts beside the pages). @param {() => void} run */
export function afterEach(run) {
  after = run;
}

const NOT_FOUND = {
  title: "notFound",
  render: async () => [
    element("p", { id: "not-found" }, words("a", "toDashboard", { href: "/" })),
  ],
};

// Views open one after another: a view still waiting for its data when the next is asked for
// would otherwise finish last and paint itself over it.
let opening = Promise.resolve();
// The address last asked for: a filter changed while the one before it still loads builds on
// it, not on the address shown, so neither change is lost.
let asked = "";

/**
 * Draw the view at `href`; `push` adds it to the history once drawn, `focus` moves the focus
 * to its heading (after a click or a sign-in, not on the first load).
 * @param {string} href
 * @param {{ push?: boolean, focus?: boolean }} [options]
 */
export function open(href, options = {}) {
  asked = href;
  const opened = opening.then(() => draw(href, options));
  opening = opened.catch(() => {});
  return opened;
}

/** The current view drawn again (after a write). */
export function reload() {
  return open(location.pathname + location.search);
}

/**
 * The current address with `changes` to its query (an empty value removes one), opened.
 * @param {Record<string, string | null>} changes
 */
export function navigate(changes) {
  const base = new URL(asked || location.href, location.origin);
  const next = new URLSearchParams(base.pathname === location.pathname ? base.search : location.search);
  for (const [name, value] of Object.entries(changes)) {
    if (value) next.set(name, value); else next.delete(name);
  }
  next.delete("cursor");
  const query = next.toString();
  return open(`${location.pathname}${query ? "?" + query : ""}`, { push: true });
}

/** @param {string} href @param {{ push?: boolean, focus?: boolean }} options */
async function draw(href, { push = false, focus = push } = {}) {
  const url = new URL(href, location.origin);
  const main = byId("view");
  const loading = byId("loading");
  loading.hidden = false;
  main.setAttribute("aria-busy", "true");
  try {
    await before(url);
    const [view, id] = viewAt(url.pathname);
    const nodes = await view.render(url, id);
    if (push && url.pathname + url.search !== location.pathname + location.search) {
      history.pushState(null, "", url.pathname + url.search);
    }
    const heading = words("h1", view.title, { tabindex: "-1" });
    main.replaceChildren(heading, ...nodes);
    document.title = `${t(view.title)} · ${t("brand")}`;
    for (const link of document.querySelectorAll("#pages a")) {
      // A channel's own page is within Channels.
      const href = link.getAttribute("href");
      if (href === url.pathname || (href !== "/" && url.pathname.startsWith(`${href}/`))) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    byId("pages").classList.remove("open");
    byId("menu").setAttribute("aria-expanded", "false");
    show(null);
    if (focus) heading.focus();
    after();
  } catch (error) {
    if (asked === href) asked = location.pathname + location.search;
    if (!(error instanceof SessionEnded)) show(error);
  } finally {
    loading.hidden = true;
    main.removeAttribute("aria-busy");
  }
}
