// @ts-check
// Broadcasts: a message to every person of a bot. The owner writes it, sends it to themself
// first, then to everyone, and watches it go out on its own page.
import { call, may } from "../api.js";
import { element, show, words } from "../dom.js";
import { actionButton, adding, formOf } from "../forms.js";
import { session } from "../api.js";
import { fromZoned, latinDigits } from "../format.js";
import { list, number, t } from "../i18n.js";
import { listView } from "../list.js";
import { open } from "../router.js";
import { drawn, telegramLength } from "../telegram.js";
import { badge, BOT_LANGUAGES, botChoices, channelChoices, everything, handoff, when } from "./common.js";

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
  const chosen = handoff.people;
  handoff.people = null;
  if (may("editor")) {
    const usable = botChoices(bots);
    const add = usable.length ? adding("newBroadcast", await composer(usable, chosen)) : words("p", "addBotFirst", { class: "empty" });
    before.push(add);
    // Come from "message the chosen": the composer open at once, once the page is drawn.
    if (chosen && usable.length) onceShown(add, () => /** @type {HTMLElement | null} */ (add.querySelector("[data-opens]"))?.click());
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
      { label: "state", value: stateOf },
      { label: "broadcastProgress", value: progressOf },
      { label: "created", sort: "created_at", value: (b) => when(b.created_at) },
    ],
  });
}

/** Runs `run` once `node` is on the page (a view's nodes are put there after it is built);
 * not at all if the page moved on first. @param {Node} node @param {() => void} run */
function onceShown(node, run) {
  let frames = 0;
  const look = () => {
    if (node.isConnected) run();
    else if (++frames < 300) requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
}

/** Its state, or when it is set to start while it waits for that. @param {any} b */
function stateOf(b) {
  if (b.state === "queued" && b.starts_at && new Date(b.starts_at) > new Date()) {
    const waiting = badge("scheduled", "wait", { "data-state": "scheduled" });
    waiting.textContent = t("scheduledFor", { when: when(b.starts_at) ?? "" });
    return waiting;
  }
  return badge(b.state, undefined, { "data-state": b.state });
}

/** Whom it is for, in words: everyone, or each part of its audience.
 * @param {any} b */
function audienceOf(b) {
  const parts = [];
  if (b.chosen) parts.push(t("audienceChosen", { count: number(b.chosen) }));
  if (b.channel_title) parts.push(t("audienceIn", { channel: `\u2068${b.channel_title}\u2069` }));
  if (b.member_status) parts.push(t(b.member_status));
  if (b.plan_name) parts.push(t("audiencePaidFor", { plan: `\u2068${b.plan_name}\u2069` }));
  if (b.language) parts.push(BOT_LANGUAGES[b.language]);
  return parts.length ? list(parts) : t("audienceEveryone");
}


/**
 * The form: whom it is for (everyone, a channel's members by status or plan, a language, or
 * people chosen on the Memberships page) and when it starts; a test to the owner's own chat
 * first; once it went, a button sends the same message to its audience.
 * @param {Array<{ value: string, text: string }>} usable
 * @param {number[] | null} chosen
 */
async function composer(usable, chosen) {
  const [contents, channels, plans] = await Promise.all([everything("/v1/contents"), everything("/v1/channels"), everything("/v1/plans")]);
  const titles = new Map(channels.map((c) => [c.id, c.title]));
  let people = chosen;
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
    { name: "channel_id", label: "audienceChannel", choices: [{ value: "", text: t("all") }, ...channelChoices(channels.filter((c) => c.is_paid))] },
    { name: "member_status", label: "audienceStatus", choices: [{ value: "", text: t("all") }, ...["active", "grace", "expired"].map((s) => ({ value: s, text: t(s) }))] },
    { name: "plan_id", label: "audiencePlan", choices: [{ value: "", text: t("all") },
      ...plans.map((p) => ({ value: String(p.id), text: `${p.name} \u2068(${titles.get(p.channel_id) ?? ""})\u2069` }))] },
    { name: "language", label: "audienceLanguage", choices: [{ value: "", text: t("all") }, ...Object.entries(BOT_LANGUAGES).map(([value, text]) => ({ value, text }))] },
    { name: "starts_at", label: "startsOn", type: "date", hint: "hint.starts_on" },
    { name: "starts_time", label: "startsTime", ltr: true, hint: "hint.starts_time" },
    { name: "to", label: "testTo", required: true, ltr: true, hint: "hint.test_to" },
  ], "sendTest", async (v) => {
    const body = { ...bodyOf(v), ...audienceBody(v, people) };
    await call("POST", "/v1/broadcasts/test", { ...body, to: v.to });
    const { starts_at: startsAt, ...spec } = body;
    for (const key of ["text", "content_id", "button_text", "button_url"]) delete spec[key];
    const audience = await call("POST", "/v1/broadcasts/audience", spec);
    const count = number(audience.reachable);
    const narrowed = Object.keys(spec).length > 1;
    const all = actionButton("sendToAll", async () => {
      const made = await call("POST", "/v1/broadcasts", body);
      await open(`/broadcasts/${made.id}`, { push: true, focus: true });
    }, { confirm: true });
    all.textContent = startsAt ? t("sendAt", { count, when: when(String(startsAt)) ?? "" })
      : narrowed ? t("sendToAudience", { count }) : t("sendToAll", { count });
    return element("span", { id: "broadcast-tested" }, t("testSent", { to: v.to }), " ", all);
  }, { then: async () => {}, stay: true, fieldOf: (field) => field === "people" ? "channel_id" : undefined });
  if (people) {
    const drop = words("button", "audienceEveryoneInstead", { type: "button", id: "drop-chosen" });
    const line = element("p", { class: "chosen-line", id: "broadcast-chosen" },
      element("span", { text: t("audienceChosenLine", { count: number(people.length) }) }), " ", drop);
    drop.addEventListener("click", () => { people = null; line.remove(); });
    form.prepend(line);
  }
  withPreview(form);
  return form;
}

/** The audience and start from the form's values: only what is set; the start on the
 * workspace's clock. @param {Record<string, string>} v @param {number[] | null} people */
function audienceBody(v, people) {
  /** @type {Record<string, string | number | number[]>} */
  const body = {};
  if (v.channel_id) body.channel_id = Number(v.channel_id);
  if (v.plan_id) body.plan_id = Number(v.plan_id);
  if (v.member_status) body.member_status = v.member_status;
  if (v.language) body.language = v.language;
  if (people) body.people = people;
  if (v.starts_at) {
    const time = latinDigits(v.starts_time ?? "").trim();
    // A time not in HH:MM goes as it is, for the API to refuse at the start's box.
    body.starts_at = /^([01]?\d|2[0-3]):[0-5]\d$/.test(time) ? fromZoned(v.starts_at, time, session.zone) : `${v.starts_at} ${time}`;
  }
  return body;
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
      words("dt", "state"), element("dd", {}, stateOf(now)),
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
    words("dt", "audience"), element("dd", { id: "broadcast-audience", text: audienceOf(b) }),
    ...(b.starts_at ? [words("dt", "startsAt"), element("dd", { text: when(b.starts_at) ?? "" })] : []),
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
