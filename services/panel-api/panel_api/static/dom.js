// @ts-check
// Building the page: elements with text set as text (never parsed as HTML, so nothing a person
// or an owner wrote can run), and the page's one message line.
import { ApiProblem, Refusal, SessionEnded } from "./api.js";
import { number, t } from "./i18n.js";

/**
 * @param {string} tag
 * @param {Record<string, string>} [attributes] `text` sets the text; the rest are attributes
 * @param {(Node | string)[]} children
 * @returns {HTMLElement}
 */
export function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "text") node.textContent = value; else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

/**
 * An element whose text is a word of the page, redrawn when the language changes.
 * @param {string} tag @param {string} key @param {Record<string, string>} [attributes]
 */
export function words(tag, key, attributes = {}) {
  return element(tag, { ...attributes, "data-text": key, text: t(key) });
}

const SVG = "http://www.w3.org/2000/svg";

/** @param {string} tag @param {Record<string, string | number>} [attributes] */
export function svg(tag, attributes = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  return node;
}

/** @param {string} id */
export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node;
}

/**
 * What a failed request means for the person, in the page's language.
 * @param {unknown} error
 */
export function problemText(error) {
  if (error instanceof Refusal) return error.message;
  if (!(error instanceof ApiProblem)) return t("unreachable");
  const { status, slug, detail } = error;
  if (slug === "bad-credentials" || slug === "bad-setup-code") return t("badCredentials");
  if (status === 401) return t("sessionEnded");
  if (status === 403) return t("notAllowed");
  if (status === 404 && slug !== "chat-not-found") return t("gone");
  if (status === 409) return t("changed");
  if (status === 413) return t("tooLarge");
  if (status === 422 && error.errors.length) return t("checkFields");
  if (status === 429) {
    return error.retryAfter ? t("wait", { seconds: number(error.retryAfter) }) : t("serviceDown");
  }
  if (status === 502) return t("telegramRefused", { detail });
  if (status === 500) return t("serverFailed", { id: error.requestId });
  if (status > 500) return t("serviceDown");
  return t("refusedDetail", { detail });
}

/** The message line: the problem said, or hidden when `error` is null. @param {unknown} error */
export function show(error) {
  const message = byId("message");
  if (!error || error instanceof SessionEnded) {
    message.hidden = true;
    message.textContent = "";
    return;
  }
  message.textContent = problemText(error);
  message.hidden = false;
}

/**
 * A short notice that a write went through, beside what it changed: words, or a node such as a
 * link to copy.
 * @param {string | Node} content
 */
export function notice(content, id = "") {
  const attributes = { class: "notice", role: "status", ...(id ? { id } : {}) };
  return typeof content === "string" ? element("p", { ...attributes, text: content }) : element("div", attributes, content);
}

/** Keys of words as a select's choices, each shown in the page's language. @param {string[]} keys */
export function wordChoices(keys) {
  return keys.map((value) => ({ value, text: t(value) }));
}
