// @ts-check
// Channels with the bots' rights in them, content with its link, and a paid channel's
// admission: how people get in, its whitelist, the member import and grants.
import { call, may } from "../api.js";
import { element, words } from "../dom.js";
import { formOf, actionButton } from "../forms.js";
import { number, t } from "../i18n.js";
import { listView } from "../list.js";
import { open } from "../router.js";
import { when } from "./ledger.js";

/** @param {URL} url */
export async function channels(url) {
  const nodes = await listView(url, {
    id: "channels", path: "/v1/channels",
    columns: [
      { label: "title", sort: "title", value: (c) => c.title },
      { label: "username", value: (c) => c.username ? "@" + c.username : null },
      { label: "paidChannel", value: (c) => t(c.is_paid ? "yes" : "no") },
      { label: "rights", value: (c) => rights(c) },
    ],
  });
  for (const node of nodes) {
    if (!(node instanceof HTMLElement)) continue;
    for (const flag of node.querySelectorAll("[data-flagged]")) flag.closest("tr")?.classList.add("flagged");
  }
  return nodes;
}

/** @param {{ bots: { status: string, flagged: boolean, last_error: string | null }[] }} channel */
function rights(channel) {
  const flagged = channel.bots.filter((b) => b.flagged);
  const text = channel.bots.map((b) => `${t(b.status)}${b.flagged ? " ⚠" : ""}`).join(", ");
  const node = element("span", { class: flagged.length ? "flag" : "", text: text || t("none") });
  if (flagged.length) {
    node.setAttribute("data-flagged", "");
    node.title = flagged.map((b) => b.last_error || t("notAdmin")).join("; ");
  }
  return node;
}

/** @param {URL} url */
export function contents(url) {
  return listView(url, {
    id: "contents", path: "/v1/contents",
    columns: [
      { label: "code", sort: "code", value: (c) => c.code },
      { label: "kind", value: (c) => t(c.kind) },
      { label: "link", value: (c) => copyable(c.link) },
    ],
  });
}

/** @param {string} text */
function copyable(text) {
  const button = words("button", "copy", { type: "button", class: "copy" });
  button.addEventListener("click", async () => {
    await navigator.clipboard.writeText(text);
    button.textContent = t("copied");
  });
  return element("span", { class: "copyable" }, element("code", { dir: "ltr", text }), " ", button);
}

/** @param {string} date YYYY-MM-DD @returns {string | undefined} */
function endOfDay(date) {
  return date ? new Date(`${date}T23:59:59Z`).toISOString() : undefined;
}

/** @param {URL} url */
export async function admission(url) {
  const channels = (await call("GET", "/v1/channels?limit=200")).items.filter((/** @type {any} */ c) => c.is_paid);
  const wanted = Number(url.searchParams.get("channel")) || channels[0]?.id;
  const channel = channels.find((/** @type {any} */ c) => c.id === wanted);
  if (!channel) return [words("p", "noPaidChannel", { class: "empty" })];
  const picker = /** @type {HTMLSelectElement} */ (element("select", { id: "admission-channel" },
    ...channels.map((/** @type {any} */ c) => element("option", { value: String(c.id), text: c.title }))));
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
      words("h2", "addToWhitelist"),
      formOf("whitelist-add", [
        { name: "telegram_user_id", label: "telegramUser", type: "number", required: true },
        { name: "note", label: "note" },
      ], "add", async (v) => {
        await call("POST", `/v1/channels/${channel.id}/whitelist`, { telegram_user_id: Number(v.telegram_user_id), note: v.note });
        return t("saved");
      }),
      words("h2", "importMembers"),
      formOf("import", [
        { name: "ids", label: "idsOnePerLine", type: "textarea", required: true },
        { name: "action", label: "action", options: ["whitelist", "grant"] },
        { name: "until", label: "until", type: "date" },
        { name: "reason", label: "reason", value: "imported" },
      ], "import", async (v) => {
        /** @type {Record<string, unknown>} */
        const body = { ids: v.ids.split(/[\s,;]+/).filter(Boolean), action: v.action, reason: v.reason || "imported" };
        if (v.until) body.until = endOfDay(v.until);
        const done = await call("POST", `/v1/channels/${channel.id}/import`, body);
        return t("imported", { added: number(done.added), accepted: number(done.accepted), rejected: number(done.rejected.length) });
      }),
      words("h2", "grantAccess"),
      formOf("grant", [
        { name: "telegram_user_id", label: "telegramUser", type: "number", required: true },
        { name: "until", label: "until", type: "date", required: true },
        { name: "reason", label: "reason" },
      ], "grant", async (v) => {
        await call("POST", "/v1/grants", {
          telegram_user_id: Number(v.telegram_user_id), channel_id: channel.id, until: endOfDay(v.until), reason: v.reason,
        });
        return t("saved");
      }),
      words("h2", "whitelist"),
    );
  }
  return listView(url, {
    id: "whitelist", path: `/v1/channels/${channel.id}/whitelist`, before,
    columns: [
      { label: "telegramUser", sort: "telegram_user_id", value: (w) => String(w.telegram_user_id) },
      { label: "note", value: (w) => w.note || null },
      { label: "created", sort: "created_at", value: (w) => when(w.created_at) },
    ],
    actions: admin ? (w) => [actionButton("remove", () =>
      call("DELETE", `/v1/channels/${channel.id}/whitelist/${w.telegram_user_id}`), { confirm: true })] : null,
  });
}
