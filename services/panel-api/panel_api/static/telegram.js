// @ts-check
// A message as Telegram draws it, for the previews: its HTML's tags as formatting, with every
// text set as text (never parsed as the page's HTML), and its length as Telegram counts it.
import { element } from "./dom.js";

// Telegram's HTML: the tags it reads, drawn with their look; anything else stays as typed.
const TAGS = {
  b: "b", strong: "b", i: "i", em: "i", u: "u", ins: "u", s: "s", strike: "s", del: "s",
  code: "code", pre: "pre", blockquote: "blockquote", a: "a", "tg-spoiler": "span", span: "span", "tg-emoji": "span",
};
const TAG = /<(\/?)([A-Za-z][A-Za-z0-9-]*)((?:\s+[A-Za-z-]+(?:="[^"]*")?)*)\s*>/g;

/** Entities as Telegram reads them. @param {string} text */
function unescaped(text) {
  return text.replace(/&(lt|gt|amp|quot|#\d{1,7}|#x[0-9A-Fa-f]{1,6});/g, (_, name) => {
    if (name === "lt") return "<";
    if (name === "gt") return ">";
    if (name === "amp") return "&";
    if (name === "quot") return "\"";
    const code = name[1] === "x" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : "";
  });
}

/**
 * A message as Telegram draws it: in HTML, its tags as formatting (text set as text, never
 * parsed as the page's HTML); as plain text, as typed.
 * @param {string} text @param {boolean} html @returns {Node[]}
 */
export function drawn(text, html) {
  if (!html) return [document.createTextNode(text)];
  const root = element("span");
  /** @type {HTMLElement[]} */
  const open = [root];
  let place = 0;
  for (const found of text.matchAll(TAG)) {
    const top = open[open.length - 1];
    top.append(unescaped(text.slice(place, found.index)));
    place = (found.index ?? 0) + found[0].length;
    const name = found[2].toLowerCase();
    const tag = /** @type {Record<string, string>} */ (TAGS)[name];
    if (!tag) {
      top.append(found[0]);
    } else if (found[1]) {
      if (open.length > 1) open.pop();
    } else {
      const node = element(tag, name === "tg-spoiler" ? { class: "spoiler" } : {});
      top.append(node);
      open.push(node);
    }
  }
  open[open.length - 1].append(unescaped(text.slice(place)));
  return [...root.childNodes];
}

/**
 * A message's length as Telegram counts it against its limits: UTF-16 code units of what is
 * left once its tags and entities are read (an emoji outside the BMP counts twice).
 * @param {string} text @param {boolean} html
 */
export function telegramLength(text, html) {
  return drawn(text, html).reduce((sum, node) => sum + (node.textContent ?? "").length, 0);
}
