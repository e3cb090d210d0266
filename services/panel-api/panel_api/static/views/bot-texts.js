// @ts-check
// Bot texts: what a bot says, in the owner's words. For one bot and one of the languages it
// speaks, every text the owner may reword: the text it ships, the owner's own in a box with
// the placeholders it must keep, a preview drawn as Telegram draws the message, and a way back
// to the shipped text. The bot's next update reads a saved text; no restart.
import { call, may, session } from "../api.js";
import { element, words } from "../dom.js";
import { actionButton, formOf } from "../forms.js";
import { dateTime, number, t } from "../i18n.js";
import { navigate } from "../router.js";
import { drawn } from "../telegram.js";
import { BOT_LANGUAGES, botChoices, everything } from "./common.js";

const RIGHT_TO_LEFT = new Set(["fa", "ar"]);
// The texts by where a member meets them, by their keys' first part.
const GROUPS = [
  ["textsWelcome", ["welcome", "not_understood"]],
  ["textsGate", ["gate"]],
  ["textsPay", ["pay", "coupon", "trial"]],
  ["textsAccess", ["access"]],
];
/** @param {string} key */
function groupOf(key) {
  const head = key.split(".")[0];
  return GROUPS.find(([, heads]) => heads.includes(head))?.[0] ?? "textsOther";
}

/** Sample values for a text's placeholders, in the page's language. @param {string} name */
function sample(name) {
  const soon = new Date(Date.now() + 3 * 86400e3);
  const values = {
    title: t("sample.title"), channels: `<b>${t("sample.title")}</b>`, until: dateTime(soon, session.zone),
    ends: dateTime(soon, session.zone), left: t("sample.left"), days: t("sample.days"),
    price: t("sample.price"), button: t("sample.button"), text: t("sample.text"), gateway: "Stripe",
  };
  return /** @type {Record<string, string>} */ (values)[name] ?? name;
}

// A bot command in a right-to-left text, kept left to right whole as the bot sends it.
const COMMAND = /(?<![\w/:.<\u2066])\/[a-z][a-z_]*/g;

/** @param {string} text @param {boolean} rtl */
function commands(text, rtl) {
  return rtl ? text.replace(COMMAND, "\u2066$&\u2069") : text;
}

/** @param {string} text @param {boolean} rtl */
function filled(text, rtl) {
  return commands(text.replace(/\{([a-z_]+)\}/g, (_, name) => sample(name)), rtl);
}

/**
 * One text: the shipped words, the owner's box, a preview that follows what is typed.
 * @param {number} botId @param {string} lang @param {any} item @param {boolean} editor
 */
function textCard(botId, lang, item, editor) {
  const written = item.written[lang];
  const shipped = item.shipped[lang] ?? item.shipped.en;
  const direction = RIGHT_TO_LEFT.has(lang) ? "rtl" : "ltr";
  const bubble = element("div", { class: `bubble ${item.form}`, dir: direction, "data-preview": item.key });
  const rtl = RIGHT_TO_LEFT.has(lang);
  const show = (/** @type {string} */ text) => bubble.replaceChildren(...drawn(filled(text, rtl), item.form === "html"));
  show(written?.text ?? shipped);
  const card = element("article", { class: "bot-text", "data-key": item.key },
    element("h3", {}, words("span", `text.${item.key}`), " ", element("code", { dir: "ltr", text: item.key })),
    element("p", { class: "hint" }, words("span", `form.${item.form}`), " · ",
      element("span", { text: t("textLimit", { limit: number(item.limit) }) }),
      ...(item.placeholders.length
        ? [" · ", words("span", "textKeeps"), " ", ...item.placeholders.map((/** @type {string} */ p) => element("code", { dir: "ltr", text: `{${p}}` }))]
        : [])),
    element("div", { class: "chat-preview", role: "img", "aria-label": t("textPreview") }, bubble));
  if (written) {
    card.append(
      element("p", { class: "hint", "data-written": item.key },
        element("span", { text: t("textWritten", { when: dateTime(written.updated_at, session.zone), who: written.updated_by ?? "—" }) })),
      element("p", { class: "shipped" }, words("span", "textShipped"), " ", element("bdi", { dir: direction, text: commands(shipped, rtl) })));
  }
  if (!editor) return card;
  const form = formOf(`text-${item.key}`, [
    { name: "text", label: "textYours", type: "textarea", value: written?.text ?? shipped, required: true },
  ], "save", async (v) => {
    await call("PUT", `/v1/bots/${botId}/texts`, { key: item.key, language: lang, text: v.text });
    return t("textSaved");
  });
  const box = /** @type {HTMLTextAreaElement} */ (form.querySelector("textarea"));
  box.dir = direction;
  box.addEventListener("input", () => show(box.value));
  // Closed until asked for: thirty boxes open at once make a page no one reads.
  const editing = element("details", { class: "edit-text" }, words("summary", "edit"), form);
  editing.addEventListener("toggle", () => { if (!editing.hasAttribute("open")) show(written?.text ?? shipped); });
  card.append(editing);
  if (written) {
    card.append(actionButton("textReset", () => call("POST", `/v1/bots/${botId}/texts/reset`, { key: item.key, language: lang }), { confirm: true }));
  }
  return card;
}

/** @param {URL} url */
export async function botTexts(url) {
  const bots = (await everything("/v1/bots")).filter((b) => b.status !== "removed");
  const intro = words("p", "textsIntro", { class: "intro" });
  if (!bots.length) return [intro, words("p", "addBotFirst", { class: "empty" })];
  const botId = Number(url.searchParams.get("bot") ?? bots[0].id);
  const asked = url.searchParams.get("language") ?? "";
  const found = await call("GET", `/v1/bots/${botId}/texts`);
  const lang = asked in BOT_LANGUAGES ? asked : found.default_language;
  const editor = may("editor");
  const choose = element("div", { class: "filters" },
    pickerOf("bot", "bot", botChoices(bots), String(botId), (value) => navigate({ bot: value, language: null })),
    pickerOf("text-language", "textsLanguage", Object.entries(BOT_LANGUAGES).map(([value, text]) => ({ value, text })), lang,
      (value) => navigate({ bot: String(botId), language: value })));
  const nodes = [intro, choose];
  if (editor) {
    nodes.push(formOf("default-language", [
      { name: "default_language", label: "defaultLanguage", choices: Object.entries(BOT_LANGUAGES).map(([value, text]) => ({ value, text })), value: found.default_language, hint: "hint.default_language" },
    ], "save", async (v) => {
      await call("PUT", `/v1/bots/${botId}/language`, { default_language: v.default_language });
      return t("saved");
    }));
  }
  for (const [group] of [...GROUPS, ["textsOther"]]) {
    const items = found.texts.filter((/** @type {any} */ item) => groupOf(item.key) === group);
    if (!items.length) continue;
    nodes.push(element("section", { class: "bot-texts", "aria-labelledby": `group-${group}` },
      words("h2", String(group), { id: `group-${group}` }),
      ...items.map((/** @type {any} */ item) => textCard(botId, lang, item, editor))));
  }
  return nodes;
}

/**
 * A labelled select that opens another address when changed.
 * @param {string} id @param {string} label @param {Array<{ value: string, text: string }>} choices
 * @param {string} value @param {(value: string) => void} change
 */
function pickerOf(id, label, choices, value, change) {
  const select = /** @type {HTMLSelectElement} */ (element("select", { id, name: id },
    ...choices.map((c) => element("option", { value: c.value, text: c.text }))));
  select.value = value;
  select.addEventListener("change", () => change(select.value));
  return element("label", { for: id }, words("span", label), " ", select);
}
