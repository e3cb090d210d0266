// @ts-check
// Running the workspace: bots, dead updates, the team, the audit log and the settings.
import { call, may } from "../api.js";
import { words } from "../dom.js";
import { actionButton, formOf } from "../forms.js";
import { number, t } from "../i18n.js";
import { listView } from "../list.js";
import { when } from "./ledger.js";

/** @param {URL} url */
export async function bots(url) {
  const after = may("admin") ? [
    words("h2", "addBot"),
    formOf("add-bot", [
      { name: "token", label: "token", required: true },
      { name: "mode", label: "mode", options: ["polling", "webhook"] },
    ], "add", async (v) => {
      await call("POST", "/v1/bots", { token: v.token, mode: v.mode });
      return t("saved");
    }),
  ] : [];
  return listView(url, {
    id: "bots", path: "/v1/bots", after,
    columns: [
      { label: "username", sort: "username", value: (b) => "@" + b.username },
      { label: "mode", value: (b) => t(b.mode) },
      { label: "status", sort: "status", value: (b) => t(b.status) },
      { label: "lastError", value: (b) => b.last_error },
    ],
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
    actions: (u) => [actionButton("replay", () => call("POST", `/v1/dead-updates/${u.id}/replay`), { confirm: true })],
  });
}

/** @param {URL} url */
export function team(url) {
  return listView(url, {
    id: "team", path: "/v1/team",
    columns: [
      { label: "email", sort: "email", value: (m) => m.email },
      { label: "name", value: (m) => m.display_name },
      { label: "role", sort: "role", value: (m) => t(m.role) },
      { label: "status", value: (m) => t(m.disabled ? "disabled" : "enabled") },
    ],
  });
}

/** @param {URL} url */
export function audit(url) {
  return listView(url, {
    id: "audit", path: "/v1/audit",
    columns: [
      { label: "when", sort: "at", value: (a) => when(a.at) },
      { label: "action", sort: "action", value: (a) => a.action },
      { label: "target", value: (a) => a.target },
    ],
  });
}

/** @returns {Promise<Node[]>} */
export async function workspace() {
  const settings = await call("GET", "/v1/workspace");
  const form = formOf("workspace", [
    { name: "time_zone", label: "timeZone", value: settings.time_zone ?? "", required: true },
    { name: "language", label: "language", options: ["en", "fa"], value: settings.language },
    { name: "tron_address", label: "tronAddress", value: settings.tron_address ?? "" },
  ], "save", async (v) => {
    /** @type {Record<string, string>} */
    const change = { time_zone: v.time_zone, language: v.language };
    if (v.tron_address) change.tron_address = v.tron_address;
    await call("PATCH", "/v1/workspace", change);
    return t("saved");
  });
  if (!may("owner")) {
    for (const input of form.querySelectorAll("input, select")) input.setAttribute("disabled", "");
    form.querySelector("button[type=submit]")?.remove();
  }
  form.querySelector("[name=tron_address]")?.setAttribute("dir", "ltr");
  return [form];
}
