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

// Each tag by the entity Telegram makes of it.
const ENTITIES = {
  b: "bold", strong: "bold", i: "italic", em: "italic", u: "underline", ins: "underline",
  s: "strikethrough", strike: "strikethrough", del: "strikethrough", code: "code", pre: "pre",
  blockquote: "blockquote", "tg-spoiler": "spoiler", a: "text_link",
};

/**
 * A message as Telegram stores it: the text the person reads and its entities (offsets and
 * lengths in UTF-16 units, as a JavaScript string counts), ordered by offset, the longer first
 * where two start together. What the preview draws, as data.
 * @param {string} text HTML as the owner wrote it
 * @returns {{ text: string, entities: Array<{ type: string, offset: number, length: number, url?: string }> }}
 */
export function entitiesOf(text) {
  let plain = "";
  /** @type {Array<{ type: string, offset: number, length: number, url?: string }>} */
  const found = [];
  /** @type {Array<{ type: string, offset: number, url?: string }>} */
  const open = [];
  let place = 0;
  for (const match of text.matchAll(TAG)) {
    plain += unescaped(text.slice(place, match.index));
    place = (match.index ?? 0) + match[0].length;
    const type = /** @type {Record<string, string>} */ (ENTITIES)[match[2].toLowerCase()];
    if (!type) {
      plain += match[0];
    } else if (!match[1]) {
      const href = /href="([^"]*)"/.exec(match[3] ?? "");
      open.push({ type, offset: plain.length, ...(type === "text_link" && href ? { url: unescaped(href[1]) } : {}) });
    } else {
      const started = open.pop();
      if (started && plain.length > started.offset) found.push({ ...started, length: plain.length - started.offset });
    }
  }
  plain += unescaped(text.slice(place));
  found.sort((a, b) => a.offset - b.offset || b.length - a.length || (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
  return { text: plain, entities: found.map(({ type, offset, length, url }) => ({ type, offset, length, ...(url === undefined ? {} : { url }) })) };
}

/**
 * A message's length as Telegram counts it against its limits: UTF-16 code units of what is
 * left once its tags and entities are read (an emoji outside the BMP counts twice).
 * @param {string} text @param {boolean} html
 */
export function telegramLength(text, html) {
  return drawn(text, html).reduce((sum, node) => sum + (node.textContent ?? "").length, 0);
}
