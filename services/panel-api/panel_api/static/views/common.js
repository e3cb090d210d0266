// @ts-check
// What several views use: short lists for a form's choices, moments in the workspace's zone,
// typed numbers, and text to copy.
import { call, session } from "../api.js";
import { element, words } from "../dom.js";
import { latinDigits } from "../format.js";
import { dateTime, digits, t } from "../i18n.js";

/** An id (a Telegram user's or chat's) as text: the page's digits, kept left to right so a
 * minus sign stays in front in a right-to-left line. @param {number | string} value */
export function idText(value) {
  return `\u2066${digits(value)}\u2069`;
}

/** @param {string | null | undefined} value */
export function when(value) {
  return value ? dateTime(value, session.zone) : null;
}

/** Every item of a short list (bots, channels) for a form's choices. @param {string} path */
export async function everything(path) {
  return /** @type {any[]} */ ((await call("GET", `${path}${path.includes("?") ? "&" : "?"}limit=200`)).items);
}

/** @param {any[]} channels */
export function channelChoices(channels) {
  return channels.map((c) => ({ value: String(c.id), text: c.title }));
}

/** @param {any[]} bots @param {{ removed?: boolean }} [options] `removed`: also the removed
 * ones (to filter a history by) */
export function botChoices(bots, { removed = false } = {}) {
  // Isolated left to right (an option cannot hold a bdi): "@name" stays whole in Persian.
  // A removed bot is no one's to pick for something new.
  return bots.filter((b) => removed || b.status !== "removed")
    .map((b) => ({ value: String(b.id), text: `\u2066@${b.username}\u2069` }));
}

/** A typed whole number, or the text itself so the API names what is wrong with it.
 * @param {string} text @returns {number | string} */
export function wholeNumber(text) {
  const digits = latinDigits(text);
  return /^[0-9]{1,15}$/.test(digits) ? Number(digits) : text;
}

/** @param {string} text */
export function copyable(text) {
  const button = words("button", "copy", { type: "button", class: "copy" });
  button.addEventListener("click", async () => {
    await navigator.clipboard.writeText(text);
    button.textContent = t("copied");
  });
  return element("span", { class: "copyable" }, element("code", { dir: "ltr", text }), " ", button);
}

/**
 * A person as their name, @username and Telegram id, each isolated so a Persian page keeps
 * them whole.
 * @param {{ telegram_user_id: number, person?: { username: string | null, first_name: string, last_name: string | null } }} item
 */
export function person(item) {
  const who = item.person;
  const name = [who?.first_name, who?.last_name].filter(Boolean).join(" ");
  const node = element("span", { class: "person" });
  if (name) node.append(element("bdi", { class: "name", text: name }), " ");
  if (who?.username) node.append(element("bdi", { dir: "ltr", class: "handle", text: "@" + who.username }), " ");
  node.append(element("bdi", { dir: "ltr", class: "user-id", text: digits(item.telegram_user_id) }));
  // Their own page: what they hold and paid, in one place.
  return element("a", { href: `/people/${item.telegram_user_id}`, class: "to-person" }, node);
}

// A status's tone: good (paid up, done, on), waiting (on its way, or needing time), bad
// (failed, ended, off) or plain; its words always say it, the colour only helps.
const TONES = /** @type {Record<string, string>} */ ({
  active: "good", paid: "good", done: "good", enabled: "good", onSale: "good", defaultPlan: "good",
  approved: "good", on: "good", applied: "good",
  grace: "wait", open: "wait", pending: "wait", processing: "wait", queued: "wait", fanning_out: "wait",
  sending: "wait", requested: "wait", part_paid: "wait", scheduled: "wait", paying: "wait",
  expired: "bad", failed: "bad", disabled: "bad", rejected: "bad", offSale: "bad", off: "bad", removed: "bad", paused: "bad",
});

/** A status as a badge: its words, in a colour by its tone.
 * @param {string} key the words' key @param {string} [tone] the tone, when not the key's own
 * @param {Record<string, string>} [attributes] */
export function badge(key, tone, attributes = {}) {
  return element("span", { class: "badge", "data-tone": tone ?? TONES[key] ?? "plain", text: t(key), ...attributes });
}

/** The languages the bot speaks, each by its own name. */
export const BOT_LANGUAGES = /** @type {Record<string, string>} */ ({ en: "English", fa: "فارسی", ru: "Русский", ar: "العربية" });

/** People chosen on one page for a message written on another (the Memberships page's
 * "message the chosen" opens the broadcast composer with them); taken once.
 * @type {{ people: number[] | null }} */
export const handoff = { people: null };

/** A day's end (UTC) as the API takes an expiry, or null for none. @param {string} day YYYY-MM-DD */
export function dayEnd(day) {
  return day ? new Date(`${day}T23:59:59Z`).toISOString() : null;
}
