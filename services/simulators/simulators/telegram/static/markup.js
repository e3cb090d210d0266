// @ts-check
// What the chat window needs to know about Telegram: a message sent with parse_mode HTML read
// into a tree (the tags Telegram supports, its four entities), and what a t.me link opens.
// Pure functions, so node's test runner checks them.

/**
 * @typedef {{ tag: string, href?: string, children: Part[] }} Tagged
 * @typedef {string | Tagged} Part
 */

const TAG = /<(\/?)(b|strong|i|em|u|ins|s|strike|del|code|pre|tg-spoiler|blockquote|a)(?:\s+href="([^"]*)")?\s*>/g;
const ENTITY = /&(lt|gt|amp|quot|#\d{1,7}|#x[0-9a-fA-F]{1,6});/g;
const NAMED = /** @type {Record<string, string>} */ ({ lt: "<", gt: ">", amp: "&", quot: '"' });

/** @param {string} text */
export function unescape(text) {
  return text.replace(ENTITY, (_, name) => {
    if (name in NAMED) return NAMED[name];
    const code = name[1] === "x" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : "";
  });
}

/**
 * Telegram HTML as parts: strings and tagged parts with their children. A closing tag that
 * closes nothing open is dropped; tags left open close at the end.
 * @param {string} html
 * @returns {Part[]}
 */
export function parseHtml(html) {
  /** @type {Tagged} */
  const root = { tag: "", children: [] };
  const open = [root];
  let last = 0;
  for (const match of html.matchAll(TAG)) {
    const index = match.index ?? 0;
    if (index > last) open[open.length - 1].children.push(unescape(html.slice(last, index)));
    last = index + match[0].length;
    const [, closing, tag, href] = match;
    if (closing) {
      const at = open.map((part) => part.tag).lastIndexOf(tag);
      if (at > 0) open.length = at;
      continue;
    }
    /** @type {Tagged} */
    const part = { tag, children: [] };
    if (tag === "a" && href !== undefined) part.href = unescape(href);
    open[open.length - 1].children.push(part);
    open.push(part);
  }
  if (last < html.length) open[open.length - 1].children.push(unescape(html.slice(last)));
  return root.children;
}

/**
 * What a link on a button or in a message opens in the simulated Telegram.
 * @param {string} url
 * @returns {{ kind: "start", name: string, code: string }
 *   | { kind: "invite", url: string }
 *   | { kind: "invoice", url: string }
 *   | { kind: "chat", name: string }
 *   | { kind: "web", url: string }}
 */
export function linkTarget(url) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return { kind: "web", url };
  }
  if (parsed.protocol !== "https:" || parsed.hostname !== "t.me") return { kind: "web", url };
  const path = decodeURIComponent(parsed.pathname.slice(1));
  if (path.startsWith("+") || path.startsWith("joinchat/")) return { kind: "invite", url };
  // An invoice link (createInvoiceLink): paying it opens Telegram's payment form.
  if (path.startsWith("$")) return { kind: "invoice", url };
  const name = path.split("/")[0];
  const start = parsed.searchParams.get("start");
  if (start !== null) return { kind: "start", name, code: start };
  return { kind: "chat", name };
}
