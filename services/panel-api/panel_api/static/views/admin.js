// @ts-check
// Running the workspace: bots and their default gate, dead updates, the team, one's own
// password, the audit log and the settings.
import { call, keep, may, session } from "../api.js";
import { element, words } from "../dom.js";
import { actionButton, adding, editRow, formOf } from "../forms.js";
import { has, list, number, t } from "../i18n.js";
import { listView } from "../list.js";
import { badge, channelChoices, everything, when } from "./common.js";

/** @param {URL} url */
export async function bots(url) {
  const admin = may("admin");
  const editor = may("editor");
  const channelList = await everything("/v1/channels");
  const before = admin ? [
    adding("addBot", formOf("add-bot", [
      { name: "token", label: "token", required: true, ltr: true, autocomplete: "off" },
      { name: "mode", label: "mode", options: ["polling", "webhook"] },
    ], "add", async (v) => {
      const added = await call("POST", "/v1/bots", { token: v.token, mode: v.mode });
      return t("botAdded", { username: "@" + added.username });
    })),
  ] : [];
  return listView(url, {
    id: "bots", path: "/v1/bots", before,
    columns: [
      { label: "username", sort: "username", value: (b) => element("bdi", { text: "@" + b.username }) },
      { label: "mode", value: (b) => t(b.mode) },
      { label: "status", sort: "status", value: (b) => badge(b.status) },
      { label: "defaultGate", value: (b) => list(defaultGate(channelList, b.id).map((c) => c.title)) || t("none") },
      { label: "lastError", value: (b) => b.last_error },
    ],
    actions: editor ? (b) => b.status === "removed" ? [] : [
      editRow("setDefaultGate", () => gateForm(channelList, b.id)),
      ...(admin ? botSwitches(b) : []),
    ] : null,
  });
}

/** Pause or resume a bot, or remove it (asked first: only its token brings it back).
 * @param {any} bot */
function botSwitches(bot) {
  const path = `/v1/bots/${bot.id}`;
  return [
    bot.status === "active"
      ? actionButton("pause", () => call("POST", `${path}/pause`))
      : actionButton("resume", () => call("POST", `${path}/resume`)),
    actionButton("remove", () => call("POST", `${path}/remove`), { confirm: true }),
  ];
}

/** The channels in a bot's default gate. @param {any[]} channelList @param {number} botId */
function defaultGate(channelList, botId) {
  return channelList.filter((c) => c.bots.some((/** @type {any} */ s) => s.bot_id === botId && s.default_gate));
}

/**
 * Which channels a visitor joins before the bot's content (where a content names none of its
 * own); a private channel needs the link visitors join it by.
 * @param {any[]} channelList @param {number} botId
 */
function gateForm(channelList, botId) {
  const chosen = defaultGate(channelList, botId);
  /** @type {import("../forms.js").Field[]} */
  const fields = [{
    name: "channels", label: "gateChannels", type: "checks",
    choices: channelChoices(channelList),
    value: chosen.map((c) => String(c.id)).join(","),
  }];
  for (const c of channelList.filter((c) => !c.username)) {
    const join = c.bots.find((/** @type {any} */ s) => s.bot_id === botId)?.join_url ?? "";
    fields.push({ name: `join_url_${c.id}`, label: "joinUrl", labelText: t("joinUrlOf", { title: c.title }), value: join, ltr: true });
  }
  /** @type {string[]} the channels as last sent, so that a refused `channels[n]` finds its box */
  let sent = [];
  return formOf(`default-gate-${botId}`, fields, "save", async (v) => {
    const ids = v.channels.split(",").filter(Boolean);
    sent = ids;
    await call("PUT", `/v1/bots/${botId}/default-gate`, {
      channels: ids.map((id) => ({ channel_id: Number(id), ...(v[`join_url_${id}`] ? { join_url: v[`join_url_${id}`] } : {}) })),
    });
    return t("saved");
  }, {
    fieldOf: (field) => {
      const found = /^channels\[(\d+)\]\.join_url$/.exec(field);
      return found ? `join_url_${sent[Number(found[1])]}` : undefined;
    },
  });
}

/** @param {URL} url */
export function deadUpdates(url) {
  return listView(url, {
    id: "dead-updates", path: "/v1/dead-updates",
    columns: [
      { label: "update", value: (u) => String(u.update_id) },
      { label: "kind", value: (u) => u.kind },
      { label: "attempts", sort: "attempt", value: (u) => number(u.attempt) },
      { label: "lastError", value: (u) => u.last_error },
      { label: "received", sort: "received_at", value: (u) => when(u.received_at) },
    ],
    // The update as Telegram sent it beside the replay, so the owner sees what runs again.
    actions: (u) => [
      editRow("showUpdate", () => element("pre", { class: "payload", "data-payload": String(u.id), text: JSON.stringify(u.payload, null, 2) })),
      actionButton("replay", () => call("POST", `/v1/dead-updates/${u.id}/replay`), { confirm: true }),
    ],
  });
}

const ROLES = ["admin", "editor", "viewer"];

/** @param {URL} url */
export function team(url) {
  const before = [
    adding("invite", formOf("invite", [
      { name: "email", label: "email", type: "email", required: true, autocomplete: "off" },
      { name: "display_name", label: "name" },
      { name: "role", label: "role", options: ROLES, value: "editor" },
      { name: "password", label: "firstPassword", type: "password", required: true, autocomplete: "new-password" },
    ], "invite", async (v) => {
      await call("POST", "/v1/team", { email: v.email, display_name: v.display_name, role: v.role, password: v.password });
      return t("invited", { email: v.email });
    })),
  ];
  return listView(url, {
    id: "team", path: "/v1/team", before,
    columns: [
      { label: "email", sort: "email", value: (m) => m.email },
      { label: "name", value: (m) => m.display_name },
      { label: "role", sort: "role", value: (m) => t(m.role) },
      { label: "status", value: (m) => badge(m.disabled ? "disabled" : "enabled") },
    ],
    actions: (m) => m.role === "owner" ? [] : [
      editRow("changeRole", () => formOf(`role-${m.id}`, [
        { name: "role", label: "role", options: ROLES, value: m.role },
        { name: "display_name", label: "name", value: m.display_name },
      ], "save", async (v) => {
        await call("PATCH", `/v1/team/${m.id}`, { role: v.role, display_name: v.display_name });
        return t("saved");
      })),
      m.disabled
        ? actionButton("enable", () => call("PATCH", `/v1/team/${m.id}`, { disabled: false }))
        : actionButton("disable", () => call("PATCH", `/v1/team/${m.id}`, { disabled: true }), { confirm: true }),
    ],
  });
}

/** One's own account: who is signed in, and a new password. @returns {Promise<Node[]>} */
export async function account() {
  const me = session.me ?? { email: "", role: "viewer" };
  return [
    element("p", { id: "account-who", text: t("signedInAs", { email: me.email, role: t(me.role) }) }),
    words("h2", "changePassword"),
    formOf("password", [
      { name: "current_password", label: "currentPassword", type: "password", required: true, autocomplete: "current-password" },
      { name: "new_password", label: "newPassword", type: "password", required: true, autocomplete: "new-password" },
    ], "save", async (v) => {
      // This session goes on with the pair the answer brings; every other one has ended.
      keep(await call("POST", "/v1/me/password", v));
      return t("passwordChanged");
    }),
  ];
}

/** @param {URL} url */
export async function audit(url) {
  const members = await everything("/v1/team");
  return listView(url, {
    id: "audit", path: "/v1/audit",
    filters: [
      { name: "member", label: "who", choices: members.map((m) => ({ value: String(m.id), text: m.email })) },
      { name: "kind", label: "kind", choices: AUDIT_KINDS.map((k) => ({ value: k, text: t(`audit.${k}`) })) },
    ],
    columns: [
      { label: "when", sort: "at", value: (a) => when(a.at) },
      { label: "who", value: (a) => a.member_email ? element("bdi", { dir: "ltr", text: a.member_email }) : t("system") },
      { label: "action", sort: "action", value: (a) => actionWords(a.action) },
      { label: "target", value: (a) => element("code", { dir: "ltr", text: a.target }) },
      { label: "change", value: (a) => changeOf(a.before, a.after) },
    ],
  });
}

// What audited actions are done to: the part of an action's name before the dot.
const AUDIT_KINDS = ["channels", "contents", "bots", "inbox", "whitelist", "grants", "access_events",
  "ad_slots", "ad_orders", "team", "workspace"];

/** "channels.update" as "Channels: changed", in the page's language. @param {string} action */
function actionWords(action) {
  const [kind, verb = ""] = action.split(".");
  // An action the page has no words for yet is shown by its own name.
  /** @param {string} key @param {string} name */
  const said = (key, name) => (has(key) ? t(key) : name);
  return `${said(`audit.${kind}`, kind)}: ${said(`did.${verb}`, verb)}`;
}

/**
 * The fields a change touched, each with its value before and after (JSON, as stored).
 * @param {Record<string, unknown> | null} before @param {Record<string, unknown> | null} after
 */
function changeOf(before, after) {
  const names = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])]
    .filter((name) => JSON.stringify(before?.[name]) !== JSON.stringify(after?.[name]));
  if (!names.length) return null;
  /** @param {unknown} value */
  const shown = (value) => value === undefined ? "—" : JSON.stringify(value);
  const facts = element("dl", { class: "change" }, ...names.flatMap((name) => [
    element("dt", { dir: "ltr", text: name }),
    element("dd", { dir: "ltr" },
      ...(before ? [element("del", { text: shown(before[name]) }), " → "] : []),
      element("ins", { text: shown(after?.[name]) })),
  ]));
  return element("details", {}, element("summary", { text: t("fieldsChanged", { count: number(names.length) }) }), facts);
}

/** @returns {Promise<Node[]>} */
export async function workspace() {
  const settings = await call("GET", "/v1/workspace");
  const form = formOf("workspace", [
    { name: "time_zone", label: "timeZone", value: settings.time_zone ?? "", required: true, ltr: true },
    { name: "language", label: "language", options: ["en", "fa"], value: settings.language },
    { name: "tron_address", label: "tronAddress", value: settings.tron_address ?? "", ltr: true },
    { name: "tx_explorer", label: "txExplorer", value: settings.tx_explorer, required: true, ltr: true },
  ], "save", async (v) => {
    /** @type {Record<string, string | null>} */
    const change = { time_zone: v.time_zone, language: v.language, tx_explorer: v.tx_explorer };
    change.tron_address = v.tron_address || null;
    await call("PATCH", "/v1/workspace", change);
    return t("saved");
  });
  if (!may("owner")) {
    for (const input of form.querySelectorAll("input, select")) input.setAttribute("disabled", "");
    form.querySelector("button[type=submit]")?.remove();
  }
  return [form];
}
