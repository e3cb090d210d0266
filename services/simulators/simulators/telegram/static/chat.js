// @ts-check
// The chat window on the simulated Telegram: talk to any bot as any person, press its buttons,
// follow its links, join and leave channels. Everything shown is set as text or built from
// Telegram's HTML tag by tag, never parsed as markup, so nothing a bot sends can run here.
import { linkTarget, parseHtml } from "./markup.js";

/**
 * @typedef {import("./markup.js").Part} Part
 * @typedef {{ id: number, first_name: string, username?: string }} User
 * @typedef {{ id: number, type: string, title?: string, username?: string, status: string, requested: boolean }} Channel
 * @typedef {{ text: string, url?: string, callback_data?: string, pay?: boolean }} Button
 * @typedef {{ title: string, description: string, currency: string, total_amount: number }} Invoice
 * @typedef {{ message_id: number, date: number, text?: string, caption?: string,
 *   photo?: Array<{ file_id: string }>, invoice?: Invoice, successful_payment?: { total_amount: number },
 *   refunded_payment?: { total_amount: number },
 *   reply_markup?: { inline_keyboard?: Button[][] } }} Message
 * @typedef {{ message: Message, mine: boolean, html: boolean }} Shown
 * @typedef {{ revision: number, messages: Shown[], channels: Channel[], notices: string[],
 *   people: User[], bots: User[] }} View
 */

const state = {
  person: 0,
  bot: 0,
  /** @type {User[]} */ people: [],
  /** @type {User[]} */ bots: [],
  /** @type {Channel[]} */ channels: [],
  /** @type {AbortController | null} */ polling: null,
  // Each message's element with what it was drawn from, so a redraw keeps the unchanged ones
  // (and their loaded pictures).
  /** @type {Map<number, { drawn: string, node: HTMLElement }>} */ drawn: new Map(),
};

const STATUS = /** @type {Record<string, string>} */ ({
  creator: "owner",
  administrator: "admin",
  member: "member",
  restricted: "member (restricted)",
  left: "not a member",
  kicked: "banned",
});

/** @param {string} id */
function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node;
}

/**
 * @param {string} tag
 * @param {Record<string, string>} [attributes] `text` sets the text; the rest are attributes
 * @param {(Node | string)[]} children
 */
function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "text") node.textContent = value; else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

/** The problem line: what went wrong, or hidden. @param {string | null} text */
function problem(text) {
  const line = byId("problem");
  line.textContent = text ?? "";
  line.hidden = !text;
}

/** @param {string} text */
function notice(text) {
  const line = byId("notice");
  line.textContent = text;
  line.hidden = !text;
}

/**
 * A control call; its answer, or an Error saying what the simulator refused.
 * @param {string} path @param {unknown} [body]
 */
async function call(path, body) {
  const init = body === undefined ? {} : {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  };
  const response = await fetch(path, init);
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(answer.error || answer.description || `HTTP ${response.status}`);
  return answer;
}

/** Runs an action, saying at the top what went wrong. @param {() => Promise<unknown>} action */
async function attempt(action) {
  try {
    await action();
    problem(null);
  } catch (error) {
    problem(error instanceof Error ? error.message : String(error));
  }
}

const TAGS = /** @type {Record<string, string>} */ ({
  b: "strong", strong: "strong", i: "em", em: "em", u: "u", ins: "u", s: "s", strike: "s",
  del: "s", code: "code", pre: "pre", blockquote: "blockquote", a: "a", "tg-spoiler": "span",
});

/** @param {Part[]} parts @returns {Node[]} */
function nodes(parts) {
  return parts.map((part) => {
    if (typeof part === "string") return document.createTextNode(part);
    const node = document.createElement(TAGS[part.tag] ?? "span");
    if (part.tag === "tg-spoiler") {
      node.className = "spoiler";
      node.tabIndex = 0;
    }
    const href = part.href;
    if (part.tag === "a" && href && /^https?:\/\//i.test(href)) {
      node.setAttribute("href", href);
      node.addEventListener("click", (event) => {
        event.preventDefault();
        void attempt(() => open(href));
      });
    }
    node.append(...nodes(part.children));
    return node;
  });
}

/** @param {Message} message */
function keyboard(message) {
  const rows = message.reply_markup?.inline_keyboard ?? [];
  const box = element("div", { class: "keyboard" });
  for (const row of rows) {
    const line = element("div", { class: "row" });
    for (const button of row) {
      const node = element("button", { type: "button", text: button.text });
      const url = button.url;
      const data = button.callback_data;
      if (url) {
        node.classList.add("url");
        node.title = url;
        node.addEventListener("click", () => void attempt(() => open(url)));
      } else if (button.pay) {
        // Telegram's Pay button under an invoice: the payment form, paid at once.
        node.classList.add("url");
        node.addEventListener("click", () => void attempt(() => pay({ message_id: message.message_id })));
      } else if (data !== undefined) {
        node.addEventListener("click", () => void attempt(() => call("/_sim/press", {
          bot_id: state.bot, user_id: state.person, message_id: message.message_id, data,
        })));
      }
      line.append(node);
    }
    box.append(line);
  }
  return box;
}

/** @param {Shown} shown */
function messageItem(shown) {
  const { message } = shown;
  const item = element("li", {
    class: shown.mine ? "mine" : "theirs",
    "data-message-id": String(message.message_id),
  });
  const photo = message.photo?.at(-1);
  if (photo) {
    const picture = element("img", {
      src: `/_sim/files/${encodeURIComponent(photo.file_id)}`,
      alt: "Picture sent by the bot",
    });
    picture.addEventListener("load", () => {
      const list = byId("messages");
      if (list.lastElementChild === item) list.scrollTop = list.scrollHeight;
    });
    item.append(picture);
  }
  if (message.invoice) {
    const { title, description, total_amount: amount } = message.invoice;
    item.append(element("div", { class: "invoice" },
      element("strong", { text: title }),
      element("p", { class: "text", dir: "auto", text: description }),
      element("p", { class: "price", text: `${amount} ⭐` })));
  }
  if (message.successful_payment) {
    item.append(element("p", { class: "text", text: `You paid ${message.successful_payment.total_amount} ⭐.` }));
  }
  if (message.refunded_payment) {
    item.append(element("p", { class: "text", text: `${message.refunded_payment.total_amount} ⭐ refunded to you.` }));
  }
  const text = message.text ?? message.caption;
  if (text) {
    const paragraph = element("p", { class: "text", dir: "auto" });
    paragraph.append(...(shown.html ? nodes(parseHtml(text)) : [text]));
    item.append(paragraph);
  }
  if (message.reply_markup?.inline_keyboard?.length) item.append(keyboard(message));
  const at = new Date(message.date * 1000);
  item.append(element("time", { datetime: at.toISOString(), text: at.toLocaleTimeString() }));
  return item;
}

/** @param {View} view @param {boolean} first the chat's first answer: old notices stay unsaid */
function render(view, first) {
  state.people = view.people;
  state.bots = view.bots;
  state.channels = view.channels;
  renderPeople();
  renderBots();
  renderChannels();
  const bot = state.bots.find((b) => b.id === state.bot);
  byId("chat-title").textContent = bot ? `@${bot.username}` : "Pick a bot";
  const list = byId("messages");
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  const drawn = new Map();
  const items = view.messages.map((shown) => {
    const source = JSON.stringify(shown);
    const kept = state.drawn.get(shown.message.message_id);
    const node = kept && kept.drawn === source ? kept.node : messageItem(shown);
    drawn.set(shown.message.message_id, { drawn: source, node });
    return node;
  });
  state.drawn = drawn;
  list.replaceChildren(...items);
  if (atBottom) list.scrollTop = list.scrollHeight;
  if (view.notices.length && !first) notice(view.notices[view.notices.length - 1]);
}

function renderPeople() {
  const select = /** @type {HTMLSelectElement} */ (byId("person"));
  select.replaceChildren(...state.people.map((person) => element("option", {
    value: String(person.id),
    text: `${person.first_name} (id ${person.id})`,
  })));
  select.value = String(state.person);
}

function renderBots() {
  byId("bots").replaceChildren(...state.bots.map((bot) => {
    const button = element("button", {
      type: "button",
      "aria-pressed": String(bot.id === state.bot),
      text: `@${bot.username}`,
    });
    button.addEventListener("click", () => choose(state.person, bot.id));
    return element("li", {}, button);
  }));
}

function renderChannels() {
  byId("channels").replaceChildren(...state.channels.map((channel) => {
    const name = channel.title ?? String(channel.id);
    const status = channel.requested ? "asked to join" : (STATUS[channel.status] ?? channel.status);
    const item = element(
      "li",
      { "data-chat-id": String(channel.id) },
      element("span", { dir: "auto", text: channel.username ? `${name} (@${channel.username})` : name }),
      element("span", { class: "status", text: status }),
    );
    const inside = ["member", "restricted", "administrator"].includes(channel.status);
    if (inside) {
      const leave = element("button", { type: "button", text: "Leave", "aria-label": `Leave ${name}` });
      leave.addEventListener("click", () => void attempt(
        () => call("/_sim/leave", { chat_id: channel.id, user_id: state.person }),
      ));
      item.append(leave);
    } else if (channel.username && channel.status === "left" && !channel.requested) {
      const join = element("button", { type: "button", text: "Join", "aria-label": `Join ${name}` });
      join.addEventListener("click", () => void attempt(
        () => call("/_sim/join", { chat_id: channel.id, user_id: state.person }),
      ));
      item.append(join);
    }
    return item;
  }));
}

/** What a link opens: a bot's /start, a channel through an invite, or a web page. @param {string} url */
async function open(url) {
  const target = linkTarget(url);
  if (target.kind === "web") {
    window.open(target.url, "_blank", "noopener");
    return;
  }
  if (target.kind === "invoice") {
    await pay({ link: target.url });
    return;
  }
  if (target.kind === "invite") {
    const answer = await call("/_sim/join", { user_id: state.person, invite_link: target.url });
    notice(answer.requested ? "Join request sent: the channel's admins decide." : "You joined the channel.");
    return;
  }
  const bot = state.bots.find((b) => b.username?.toLowerCase() === target.name.toLowerCase());
  if (bot) {
    choose(state.person, bot.id);
    if (target.kind === "start") await send(`/start ${target.code}`);
    return;
  }
  const channel = state.channels.find((c) => c.username?.toLowerCase() === target.name.toLowerCase());
  if (!channel) throw new Error(`Nobody is called @${target.name} in the simulated Telegram.`);
  await call("/_sim/join", { chat_id: channel.id, user_id: state.person });
  notice(`You joined ${channel.title ?? channel.username}.`);
}

/**
 * Pays an invoice with Stars as Telegram's form would: the bot has 10 s to accept the
 * pre-checkout; the chat says what came of it.
 * @param {{ link?: string, message_id?: number }} which
 */
async function pay(which) {
  if (!state.bot) throw new Error("Pick a bot first.");
  notice("Paying with Stars…");
  const answer = await call("/_sim/pay", { bot_id: state.bot, user_id: state.person, ...which });
  if (answer.ok) notice(`Paid ${answer.successful_payment.total_amount} ⭐.`);
  else notice(answer.error_message ? `Payment refused: ${answer.error_message}` : "The bot did not answer in time: nothing was paid.");
}

/** @param {string} text */
async function send(text) {
  if (!state.bot) throw new Error("Pick a bot first.");
  const person = state.people.find((p) => p.id === state.person);
  const language = /** @type {HTMLSelectElement} */ (byId("language")).value;
  await call("/_sim/messages", {
    bot_id: state.bot, user_id: state.person, text, first_name: person?.first_name ?? "",
    // The person's Telegram language, as Telegram puts it in every update from them.
    ...(language ? { language_code: language } : {}),
  });
}

/** Shows one person's chat with one bot, kept in the address so a reload stays there. */
function choose(/** @type {number} */ person, /** @type {number} */ bot) {
  if (person === state.person && bot === state.bot && state.polling) return;
  state.person = person;
  state.bot = bot;
  localStorage.setItem("person", String(person));
  const query = new URLSearchParams({ person: String(person), bot: String(bot) });
  history.replaceState(null, "", `?${query}`);
  notice("");
  state.drawn.clear();
  byId("messages").replaceChildren();
  void follow();
}

/** The long poll: each answer is the whole view, sent as soon as anything changed. */
async function follow() {
  state.polling?.abort();
  const controller = new AbortController();
  state.polling = controller;
  let revision = -1;
  while (!controller.signal.aborted) {
    try {
      const query = new URLSearchParams({
        user_id: String(state.person), bot_id: String(state.bot), after: String(revision),
      });
      const response = await fetch(`/_sim/view?${query}`, { signal: controller.signal });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      /** @type {View} */
      const view = await response.json();
      if (controller.signal.aborted) return;
      problem(null);
      render(view, revision < 0);
      revision = view.revision;
    } catch {
      if (controller.signal.aborted) return;
      problem("The simulated Telegram is not answering; trying again.");
      await new Promise((resolve) => { setTimeout(resolve, 2000); });
    }
  }
}

async function start() {
  /** @type {User[]} */
  const people = await call("/_sim/people");
  /** @type {User[]} */
  const bots = await call("/_sim/bots");
  state.people = people;
  state.bots = bots;
  const asked = new URLSearchParams(location.search);
  // The person asked for in the address, else the one this browser was last, else someone new.
  let person = Number(asked.get("person"));
  if (person > 0 && !people.some((p) => p.id === person)) {
    people.push({ id: person, first_name: `User ${person}` });
  }
  if (!(person > 0)) person = Number(localStorage.getItem("person"));
  if (!people.some((p) => p.id === person)) {
    /** @type {User} */
    const made = await call("/_sim/people", { first_name: "Visitor" });
    people.push(made);
    person = made.id;
  }
  const bot = Number(asked.get("bot")) || bots[0]?.id || 0;
  const language = /** @type {HTMLSelectElement} */ (byId("language"));
  language.value = localStorage.getItem("language") ?? "";
  language.addEventListener("change", () => localStorage.setItem("language", language.value));
  byId("person").addEventListener("change", (event) => {
    choose(Number(/** @type {HTMLSelectElement} */ (event.target).value), state.bot);
  });
  byId("new-person").addEventListener("submit", (event) => {
    event.preventDefault();
    const form = /** @type {HTMLFormElement} */ (event.target);
    const input = /** @type {HTMLInputElement} */ (form.elements.namedItem("first_name"));
    void attempt(async () => {
      /** @type {User} */
      const made = await call("/_sim/people", { first_name: input.value });
      state.people.push(made);
      input.value = "";
      choose(made.id, state.bot);
    });
  });
  byId("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = /** @type {HTMLInputElement} */ (byId("text"));
    const text = input.value.trim();
    if (!text) return;
    void attempt(async () => {
      await send(text);
      input.value = "";
    });
  });
  renderPeople();
  renderBots();
  choose(person, bot);
}

void attempt(start);
