// @ts-check
// Broadcasts: a message to every person of a bot. The owner writes it, sends it to themself
// first, then to everyone, and watches it go out on its own page.
import { call, may } from "../api.js";
import { element, show, words } from "../dom.js";
import { actionButton, adding, formOf } from "../forms.js";
import { number, t } from "../i18n.js";
import { listView } from "../list.js";
import { open } from "../router.js";
import { drawn, telegramLength } from "../telegram.js";
import { botChoices, everything, when } from "./common.js";

const OPEN = ["queued", "fanning_out", "sending"];
const STATES = [...OPEN, "done", "cancelled"];

/** What a broadcast says, short: its text without tags, or its content's code.
 * @param {any} b */
function said(b) {
  if (b.text === null) return element("span", {}, words("span", "contentItem"), " ", element("code", { dir: "ltr", text: b.content_code ?? "—" }));
  const plain = new DOMParser().parseFromString(b.text, "text/html").body.textContent ?? "";
  return element("bdi", { text: plain.length > 80 ? `${plain.slice(0, 79)}…` : plain });
}

/** Sent of those queued, as a bar and in figures. @param {any} b */
function progressOf(b) {
  const done = b.sent + b.failed;
  return element("span", { class: "progress" },
    element("progress", { max: String(Math.max(b.recipients, 1)), value: String(done), "aria-label": t("broadcastProgress") }),
    " ", element("span", { "data-figure": "progress", text: t("sentOf", { sent: number(b.sent), of: number(b.recipients) }) }));
}

/** @param {URL} url */
export async function broadcasts(url) {
  const bots = await everything("/v1/bots");
  const before = [];
  if (may("editor")) {
    const usable = botChoices(bots);
    before.push(usable.length ? adding("newBroadcast", await composer(usable)) : words("p", "addBotFirst", { class: "empty" }));
  }
  return listView(url, {
    id: "broadcasts", path: "/v1/broadcasts", before,
    filters: [
      { name: "state", label: "state", values: STATES },
      { name: "bot", label: "bot", choices: botChoices(bots, { removed: true }) },
    ],
    columns: [
      { label: "broadcastId", sort: "id", value: (b) => element("a", { href: `/broadcasts/${b.id}`, text: number(b.id) }) },
      { label: "message", value: said },
      { label: "bot", value: (b) => element("bdi", { dir: "ltr", text: "@" + b.bot_username }) },
      { label: "state", value: (b) => words("span", b.state, { "data-state": b.state }) },
      { label: "broadcastProgress", value: progressOf },
      { label: "created", sort: "created_at", value: (b) => when(b.created_at) },
    ],
  });
}

/**
 * The form: a test to the owner's own chat first; once it went, a button sends the same message
 * to everyone the bot can reach.
 * @param {Array<{ value: string, text: string }>} usable
 */
async function composer(usable) {
  const contents = await everything("/v1/contents");
  const byBot = new Map(usable.map((b) => [b.value, b.text]));
  const contentChoices = [
    { value: "", text: t("writeText") },
    ...contents.filter((c) => byBot.has(String(c.bot_id)))
      .map((c) => ({ value: String(c.id), text: `${c.code} \u2066${byBot.get(String(c.bot_id))}\u2069` })),
  ];
  const form = formOf("add-broadcast", [
    { name: "bot_id", label: "bot", choices: usable },
    { name: "content_id", label: "broadcastContent", choices: contentChoices },
    { name: "text", label: "message", type: "textarea", showIf: ["content_id", [""]], hint: "hint.broadcast_text" },
    { name: "button_text", label: "buttonText" },
    { name: "button_url", label: "buttonUrl", type: "url", ltr: true },
    { name: "to", label: "testTo", required: true, ltr: true, hint: "hint.test_to" },
  ], "sendTest", async (v) => {
    const body = bodyOf(v);
    await call("POST", "/v1/broadcasts/test", { ...body, to: v.to });
    const audience = await call("GET", `/v1/broadcasts/audience?bot=${body.bot_id}`);
    const all = actionButton("sendToAll", async () => {
      const made = await call("POST", "/v1/broadcasts", body);
      await open(`/broadcasts/${made.id}`, { push: true, focus: true });
    }, { confirm: true });
    all.textContent = t("sendToAll", { count: number(audience.reachable) });
    return element("span", { id: "broadcast-tested" }, t("testSent", { to: v.to }), " ", all);
  }, { then: async () => {}, stay: true });
  withPreview(form);
  return form;
}

// The formatting a button puts around what is chosen in the box: its tag's opening and closing.
const FORMATS = [
  ["bold", "<b>", "</b>"], ["italic", "<i>", "</i>"], ["code", "<code>", "</code>"], ["link", '<a href="https://">', "</a>"],
];

/**
 * Buttons that put Telegram's tags around the text chosen in `box` (or where the caret is),
 * so an owner formats without writing HTML.
 * @param {HTMLTextAreaElement} box
 */
function toolbar(box) {
  return element("div", { class: "toolbar", role: "toolbar", "aria-label": t("fmt.bar") },
    ...FORMATS.map(([name, open, close]) => {
      const button = words("button", `fmt.${name}`, { type: "button", "data-format": name });
      button.addEventListener("click", () => {
        const { selectionStart: start, selectionEnd: end, value } = box;
        box.value = value.slice(0, start) + open + value.slice(start, end) + close + value.slice(end);
        // A link's address is what to write next; otherwise the text inside the tags.
        const caret = name === "link" ? start + open.length - 2 : start + open.length;
        box.focus();
        box.setSelectionRange(caret, name === "link" ? caret : end + open.length);
        box.dispatchEvent(new Event("input"));
      });
      return button;
    }));
}

// Telegram's limit on a message, in UTF-16 units once its entities are read.
const TEXT_LIMIT = 4096;

/**
 * Under the message box: its length as Telegram counts it, against the limit, and the message
 * drawn as Telegram will show it, with its button; both follow what is typed.
 * @param {HTMLElement} form
 */
function withPreview(form) {
  const box = /** @type {HTMLTextAreaElement} */ (form.querySelector("textarea[name=text]"));
  const label = /** @type {HTMLInputElement} */ (form.querySelector("input[name=button_text]"));
  const count = element("span", { class: "hint", id: "broadcast-length", "aria-live": "polite" });
  const bubble = element("div", { class: "bubble html", id: "broadcast-preview", dir: "auto" });
  const button = element("div", { class: "bubble button", id: "broadcast-preview-button", hidden: "" });
  const draw = () => {
    const length = telegramLength(box.value, true);
    count.textContent = t("lengthOf", { length: number(length), limit: number(TEXT_LIMIT) });
    count.toggleAttribute("data-over", length > TEXT_LIMIT);
    bubble.replaceChildren(...drawn(box.value, true));
    button.textContent = label.value;
    button.hidden = !label.value;
  };
  box.addEventListener("input", draw);
  label.addEventListener("input", draw);
  box.before(toolbar(box));
  box.closest(".field")?.append(count,
    element("div", { class: "chat-preview", role: "img", "aria-label": t("textPreview") }, bubble, button));
  draw();
}

/** The API's body from the form's values: a text or a content, a button when both are given.
 * @param {Record<string, string>} v */
function bodyOf(v) {
  /** @type {Record<string, string | number>} */
  const body = { bot_id: Number(v.bot_id) };
  if (v.content_id) body.content_id = Number(v.content_id); else body.text = v.text ?? "";
  if (v.button_text) body.button_text = v.button_text;
  if (v.button_url) body.button_url = v.button_url;
  return body;
}

/** One broadcast: what it says, its progress (kept up to date while it runs), and Cancel.
 * @param {URL} _url @param {number} id */
export async function broadcast(_url, id) {
  const b = await call("GET", `/v1/broadcasts/${id}`);
  const figures = element("dl", { class: "facts", id: "broadcast-progress" });
  const bar = element("p", {});
  const draw = (/** @type {any} */ now) => {
    figures.replaceChildren(
      words("dt", "state"), element("dd", {}, words("span", now.state, { "data-state": now.state })),
      ...["recipients", "queued", "sent", "failed", "skipped", "unsent"].flatMap((key) => [
        words("dt", `figure.${key}`), element("dd", { "data-figure": key, text: number(now[key]) }),
      ]),
      words("dt", "started"), element("dd", { text: when(now.started_at) ?? "—" }),
      words("dt", "finished"), element("dd", { text: when(now.finished_at) ?? "—" }));
    bar.replaceChildren(progressOf(now));
    if (now.error) bar.append(" ", element("span", { text: now.error }));
  };
  draw(b);
  if (OPEN.includes(b.state)) {
    // Until it ends, or the page is left.
    const timer = setInterval(async () => {
      if (!figures.isConnected) {
        clearInterval(timer);
        return;
      }
      try {
        const now = await call("GET", `/v1/broadcasts/${id}`);
        draw(now);
        if (!OPEN.includes(now.state)) {
          clearInterval(timer);
          document.querySelector("#cancel-broadcast")?.remove();
        }
      } catch (error) {
        clearInterval(timer);
        show(error);
      }
    }, 2000);
  }
  const facts = element("dl", { class: "facts", id: "broadcast-facts" },
    words("dt", "bot"), element("dd", {}, element("bdi", { dir: "ltr", text: "@" + b.bot_username })),
    words("dt", "message"), element("dd", {}, said(b)),
    ...(b.button_text ? [words("dt", "messageButton"), element("dd", {}, element("bdi", { text: b.button_text }), " ",
      element("code", { dir: "ltr", text: b.button_url }))] : []),
    words("dt", "createdBy"), element("dd", { text: b.created_by ?? "—" }),
    words("dt", "created"), element("dd", { text: when(b.created_at) ?? "" }));
  const actions = may("editor") && OPEN.includes(b.state)
    ? [element("p", { id: "cancel-broadcast" }, actionButton("cancelBroadcast", () => call("POST", `/v1/broadcasts/${id}/cancel`), { confirm: true }))]
    : [];
  return [
    element("h2", { text: t("broadcastNumber", { id: number(b.id) }) }), facts,
    words("h3", "broadcastProgress"), bar, figures, ...actions,
    element("p", {}, words("a", "toBroadcasts", { href: "/broadcasts" })),
  ];
}
