// @ts-check
// Channels with the bots' rights in them, each channel's own page (paid or not, its plan and
// reminders), content with its gate and link, and a paid channel's admission: how people get
// in, its whitelist, the member import and grants.
import { call, may } from "../api.js";
import { element, words } from "../dom.js";
import { actionButton, adding, editRow, formOf } from "../forms.js";
import { latinDigits } from "../format.js";
import { digits, list, money, number, t } from "../i18n.js";
import { listView } from "../list.js";
import { telegramLength } from "../telegram.js";
import { open } from "../router.js";
import { botChoices, channelChoices, copyable, everything, idText, wholeNumber, when } from "./common.js";

/** @param {URL} url */
export async function channels(url) {
  const before = [];
  if (may("admin")) {
    const bots = await everything("/v1/bots");
    before.push(bots.length ? adding("addChannel", formOf("add-channel", [
      { name: "bot_id", label: "checkedBy", choices: botChoices(bots) },
      { name: "chat", label: "chat", required: true, ltr: true },
    ], "find", async (v) => {
      const found = await call("POST", "/v1/channels", { bot_id: Number(v.bot_id), chat: v.chat });
      return t("channelFound", { title: found.chat.title, rights: rightsText(found.rights) });
    }, { refusals: { "chat-not-found": ["chat", "not-found"] } })) : words("p", "addBotFirst", { class: "empty" }));
  }
  const nodes = await listView(url, {
    id: "channels", path: "/v1/channels", before,
    columns: [
      { label: "title", sort: "title", value: (c) => element("a", { href: `/channels/${c.id}`, text: c.title }) },
      { label: "username", value: (c) => c.username ? element("bdi", { text: "@" + c.username }) : null },
      { label: "paidChannel", value: (c) => c.plan && c.is_paid ? money(c.plan.price, c.plan.currency) : t("free") },
      { label: "rights", value: (c) => rights(c) },
    ],
  });
  for (const node of nodes) {
    if (!(node instanceof HTMLElement)) continue;
    for (const flag of node.querySelectorAll("[data-flagged]")) flag.closest("tr")?.classList.add("flagged");
  }
  return nodes;
}

/** A bot's standing in words: "admin, can invite, can restrict" or what it lacks.
 * @param {{ status: string, is_admin: boolean, can_invite_users: boolean, can_restrict_members: boolean, last_error: string | null }} r */
function rightsText(r) {
  const said = [t(r.status)];
  if (r.is_admin) {
    said.push(t(r.can_invite_users ? "canInvite" : "cannotInvite"), t(r.can_restrict_members ? "canRestrict" : "cannotRestrict"));
  } else {
    said.push(t("notAdmin"));
  }
  return list(said);
}

/** @param {{ bots: { status: string, flagged: boolean, last_error: string | null }[] }} channel */
function rights(channel) {
  const flagged = channel.bots.filter((b) => b.flagged);
  const text = list(channel.bots.map((b) => `${t(b.status)}${b.flagged ? " ⚠" : ""}`));
  const node = element("span", { class: flagged.length ? "flag" : "", text: text || t("none") });
  if (flagged.length) {
    node.setAttribute("data-flagged", "");
    node.title = flagged.map((b) => b.last_error || t("notAdmin")).join("; ");
  }
  return node;
}

/** One channel: what each bot may do there, its links, and (admins) whether it is paid and how.
 * @param {URL} _url @param {number} id */
export async function channel(_url, id) {
  const [found, bots] = await Promise.all([call("GET", `/v1/channels/${id}`), everything("/v1/bots")]);
  const names = Object.fromEntries(bots.map((b) => [b.id, "@" + b.username]));
  const facts = element("dl", { class: "facts", id: "channel-facts" },
    words("dt", "title"), element("dd", { text: found.title }),
    words("dt", "username"), element("dd", {}, element("bdi", { dir: "ltr", text: found.username ? "@" + found.username : t("none") })),
    words("dt", "telegramId"), element("dd", {}, element("bdi", { dir: "ltr", text: digits(found.telegram_chat_id) })),
    ...(found.pay_link ? [words("dt", "payLink"), element("dd", {}, copyable(found.pay_link))] : []),
    ...(found.join_request_link ? [words("dt", "joinRequestLink"), element("dd", {}, copyable(found.join_request_link))] : []));
  const standing = element("ul", { id: "channel-bots" }, ...found.bots.map((/** @type {any} */ b) => element("li",
    { class: b.flagged ? "flag" : "" },
    element("bdi", { text: names[b.bot_id] ?? `#${b.bot_id}` }), `: ${rightsText(b)}`,
    ...(b.last_error ? [` (${b.last_error})`] : []),
    ...(b.checked_at ? [` · ${t("checkedAt")} ${when(b.checked_at)}`] : []))));
  const nodes = [element("h2", { text: found.title }), facts, words("h3", "botsThere"), standing];
  if (found.is_paid) nodes.push(element("p", {}, element("a", { href: `/admission?channel=${id}`, "data-text": "toAdmission", text: t("toAdmission") })));
  if (!may("admin")) return nodes;
  const plan = found.plan ?? { price: "", currency: "USD", period_days: 30, grace_days: 3 };
  // Until one is chosen, the first bot that is an admin there sells and admits.
  const manager = found.manager_bot_id ?? found.bots.find((/** @type {any} */ b) => b.is_admin)?.bot_id;
  nodes.push(words("h3", "selling"), formOf("paid", [
    { name: "is_paid", label: "sellAccess", type: "checkbox", value: found.is_paid ? "true" : "" },
    { name: "manager_bot_id", label: "managerBot", choices: [{ value: "", text: t("none") }, ...botChoices(bots)],
      value: manager ? String(manager) : "", showIf: ["is_paid", ["true"]] },
    { name: "price", label: "price", value: plan.price, type: "amount", required: true, ltr: true, showIf: ["is_paid", ["true"]] },
    { name: "currency", label: "currency", value: plan.currency, required: true, ltr: true, showIf: ["is_paid", ["true"]] },
    { name: "period_days", label: "periodDays", type: "number", value: String(plan.period_days), required: true, showIf: ["is_paid", ["true"]] },
    { name: "grace_days", label: "graceDays", type: "number", value: String(plan.grace_days), required: true, showIf: ["is_paid", ["true"]] },
    { name: "reminder_hours", label: "reminderHours", value: found.reminder_hours.join(", "), ltr: true, showIf: ["is_paid", ["true"]] },
  ], "save", async (v) => {
    /** @type {Record<string, unknown>} */
    const change = { is_paid: v.is_paid === "true" };
    if (change.is_paid) {
      change.manager_bot_id = v.manager_bot_id ? Number(v.manager_bot_id) : null;
      change.plan = {
        price: v.price, currency: v.currency.toUpperCase(),
        period_days: wholeNumber(v.period_days), grace_days: wholeNumber(v.grace_days),
      };
      change.reminder_hours = v.reminder_hours.split(/[\s,،]+/).filter(Boolean).map(wholeNumber);
    }
    await call("PATCH", `/v1/channels/${id}`, change);
    return t("saved");
  }));
  return nodes;
}

/** The fields of a content, with what it holds now (`content`) or empty for a new one.
 * @param {any[]} bots @param {any[]} channelList @param {any} [content]
 * @returns {import("../forms.js").Field[]} */
function contentFields(bots, channelList, content) {
  const gate = content && !content.default_gate ? content.gate.map((/** @type {any} */ g) => g.channel_id).join(",") : "";
  return [
    ...(content ? [] : [{ name: "bot_id", label: "bot", choices: botChoices(bots) }]),
    { name: "code", label: "code", value: content?.code ?? "", required: true, ltr: true },
    { name: "kind", label: "kind", options: ["text", "file", "post"], value: content?.kind ?? "text" },
    { name: "body", label: "contentBody", type: "textarea", value: content?.body ?? "", showIf: ["kind", ["text", "file"]] },
    { name: "file_kind", label: "fileKind", options: ["photo", "video", "document"], value: content?.file_kind ?? "", showIf: ["kind", ["file"]] },
    { name: "file_id", label: "fileId", value: content?.file_id ?? "", required: true, ltr: true, showIf: ["kind", ["file"]] },
    { name: "from_chat_id", label: "fromChat", value: content?.from_chat_id ? String(content.from_chat_id) : "", required: true, ltr: true, showIf: ["kind", ["post"]] },
    { name: "message_id", label: "messageId", value: content?.message_id ? String(content.message_id) : "", required: true, ltr: true, showIf: ["kind", ["post"]] },
    { name: "gate", label: "gateIs", options: ["defaultGate", "ownGate"], value: gate ? "ownGate" : "defaultGate" },
    { name: "gate_channel_ids", label: "gateChannels", type: "checks", choices: channelChoices(channelList), value: gate, showIf: ["gate", ["ownGate"]] },
  ];
}

/** @param {Record<string, string>} v @param {number} botId */
function contentBody(v, botId) {
  return {
    bot_id: botId, code: v.code, kind: v.kind, body: v.body ?? "",
    ...(v.kind === "file" ? { file_kind: v.file_kind, file_id: v.file_id } : {}),
    ...(v.kind === "post" ? { from_chat_id: wholeNumber(v.from_chat_id), message_id: wholeNumber(v.message_id) } : {}),
    gate_channel_ids: v.gate === "ownGate" ? v.gate_channel_ids.split(",").filter(Boolean).map(Number) : null,
  };
}

/**
 * Under a content's body: its length as Telegram counts it, against the limit of what it is
 * (a file's caption 1,024, a text 4,096), following what is typed and the kind chosen.
 * @param {HTMLElement} form @returns {HTMLElement}
 */
function withLength(form) {
  const box = /** @type {HTMLTextAreaElement} */ (form.querySelector("textarea[name=body]"));
  const kind = /** @type {HTMLSelectElement} */ (form.querySelector("select[name=kind]"));
  const count = element("span", { class: "hint length", "data-length": "body", "aria-live": "polite" });
  const draw = () => {
    const limit = kind.value === "file" ? 1024 : 4096;
    const length = telegramLength(box.value, false);
    count.textContent = t("lengthOf", { length: number(length), limit: number(limit) });
    count.toggleAttribute("data-over", length > limit);
  };
  box.addEventListener("input", draw);
  kind.addEventListener("change", draw);
  box.closest(".field")?.append(count);
  draw();
  return form;
}

/** @param {URL} url */
export async function contents(url) {
  const editor = may("editor");
  const [bots, channelList] = editor ? await Promise.all([everything("/v1/bots"), everything("/v1/channels")]) : [[], []];
  const before = [];
  if (editor) {
    before.push(bots.length
      ? adding("addContent", withLength(formOf("add-content", contentFields(bots, channelList), "add", async (v) => {
        const made = await call("POST", "/v1/contents", contentBody(v, Number(v.bot_id)));
        return t("contentMade", { link: made.link });
      })))
      : words("p", "addBotFirst", { class: "empty" }));
  }
  return listView(url, {
    id: "contents", path: "/v1/contents", before,
    columns: [
      { label: "code", sort: "code", value: (c) => element("code", { dir: "ltr", text: c.code }) },
      { label: "kind", value: (c) => t(c.kind) },
      { label: "gate", value: (c) => (c.default_gate ? t("defaultGate") + ": " : "") + (list(c.gate.map((/** @type {any} */ g) => g.title)) || t("none")) },
      { label: "link", value: (c) => copyable(c.link) },
    ],
    actions: editor ? (c) => [
      editRow("edit", () => withLength(formOf(`edit-content-${c.id}`, contentFields(bots, channelList, c), "save", async (v) => {
        await call("PATCH", `/v1/contents/${c.id}`, contentBody(v, c.bot_id));
        return t("saved");
      }))),
      actionButton("delete", () => call("DELETE", `/v1/contents/${c.id}`), { confirm: true }),
    ] : null,
  });
}

/** The moment `days` whole days from now, as the API takes it. @param {string} days */
function daysFromNow(days) {
  const n = wholeNumber(days);
  return typeof n === "number" ? new Date(Date.now() + n * 86_400_000).toISOString() : days;
}

/** @param {string} date YYYY-MM-DD @returns {string | undefined} */
function endOfDay(date) {
  return date ? new Date(`${date}T23:59:59Z`).toISOString() : undefined;
}

/** @param {URL} url */
export async function admission(url) {
  const channels = (await everything("/v1/channels")).filter((c) => c.is_paid);
  const wanted = Number(url.searchParams.get("channel")) || channels[0]?.id;
  const channel = channels.find((c) => c.id === wanted);
  if (!channel) return [words("p", "noPaidChannel", { class: "empty" })];
  const picker = /** @type {HTMLSelectElement} */ (element("select", { id: "admission-channel" },
    ...channels.map((c) => element("option", { value: String(c.id), text: c.title }))));
  picker.value = String(channel.id);
  picker.addEventListener("change", () => open(`/admission?channel=${picker.value}`, { push: true }));
  const admin = may("admin");
  const before = [
    element("label", {}, words("span", "channel"), picker),
    element("p", { id: "admission-mode", text: `${t("admissionMode")}: ${t(channel.admission)}` }),
  ];
  if (admin) {
    before.push(
      formOf("mode", [{ name: "admission", label: "admissionMode", options: ["single_use_link", "join_request"], value: channel.admission }],
        "save", async (v) => { await call("PATCH", `/v1/channels/${channel.id}`, { admission: v.admission }); return t("saved"); }),
      words("h2", "grantAccess"),
      formOf("grant", [
        { name: "telegram_user_id", label: "telegramUser", required: true, ltr: true },
        { name: "until", label: "forDays", type: "number", value: "30", required: true },
        { name: "reason", label: "reason", required: true },
      ], "grant", async (v) => {
        const granted = await call("POST", "/v1/grants", {
          telegram_user_id: wholeNumber(v.telegram_user_id), channel_id: channel.id, until: daysFromNow(v.until), reason: v.reason,
        });
        return t("granted", { until: when(granted.membership.expires_at) ?? "" });
      }),
      words("h2", "addToWhitelist"),
      formOf("whitelist-add", [
        { name: "telegram_user_id", label: "telegramUser", required: true, ltr: true },
        { name: "note", label: "note" },
      ], "add", async (v) => {
        await call("POST", `/v1/channels/${channel.id}/whitelist`, { telegram_user_id: wholeNumber(v.telegram_user_id), note: v.note });
        return t("saved");
      }),
      words("h2", "importMembers"),
      formOf("import", [
        { name: "ids", label: "idsOnePerLine", type: "textarea", required: true },
        { name: "action", label: "action", options: ["whitelist", "grant"] },
        { name: "until", label: "until", type: "date", showIf: ["action", ["grant"]] },
        { name: "reason", label: "reason", value: "imported" },
      ], "import", async (v) => {
        /** @type {Record<string, unknown>} */
        const body = { ids: latinDigits(v.ids).split(/[\s,;،]+/).filter(Boolean), action: v.action, reason: v.reason || "imported" };
        if (v.until) body.until = endOfDay(v.until);
        const done = await call("POST", `/v1/channels/${channel.id}/import`, body);
        return t("imported", { added: number(done.added), accepted: number(done.accepted), rejected: number(done.rejected.length) });
      }),
      words("h2", "whitelist"),
    );
  }
  return listView(url, {
    id: "whitelist", path: `/v1/channels/${channel.id}/whitelist`, before,
    columns: [
      { label: "telegramUser", sort: "telegram_user_id", value: (w) => idText(w.telegram_user_id) },
      { label: "note", value: (w) => w.note || null },
      { label: "created", sort: "created_at", value: (w) => when(w.created_at) },
    ],
    actions: admin ? (w) => [actionButton("remove", () =>
      call("DELETE", `/v1/channels/${channel.id}/whitelist/${w.telegram_user_id}`), { confirm: true })] : null,
  });
}
