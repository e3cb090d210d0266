// @ts-check
// Access codes: free days of a paid channel for whoever sends the code to the bot or opens its
// start link, for a number of people each and until an expiry; and each use of one, with a CSV.
import { call, may } from "../api.js";
import { element, words } from "../dom.js";
import { actionButton, adding, editRow, formOf } from "../forms.js";
import { number, t } from "../i18n.js";
import { listView } from "../list.js";
import { badge, channelChoices, dayEnd, everything, person, when, wholeNumber } from "./common.js";

/** The fields a code keeps when edited. @param {any} [c] */
function limitFields(c) {
  return [
    { name: "max_uses", label: "codeUses", type: "number", value: String(c?.max_uses ?? 1), required: true, hint: "hint.code_uses" },
    { name: "expires_at", label: "couponExpires", type: "date", value: c?.expires_at ? c.expires_at.slice(0, 10) : "" },
    { name: "label", label: "codeLabel", value: c?.label ?? "", hint: "hint.code_label" },
  ];
}

/** @param {Record<string, string>} v */
function limits(v) {
  return { max_uses: wholeNumber(v.max_uses), expires_at: dayEnd(v.expires_at), label: v.label || null };
}

/** @param {URL} url */
export async function accessCodes(url) {
  const admin = may("admin");
  const channelList = (await everything("/v1/channels")).filter((c) => c.is_paid);
  const before = [words("p", "codesIntro", { class: "intro" })];
  if (admin) {
    before.push(!channelList.length
      ? words("p", "addChannelFirst", { class: "empty" })
      : adding("addCodes", formOf("add-codes", [
        { name: "channel_id", label: "channel", choices: channelChoices(channelList) },
        { name: "days", label: "codeDays", type: "number", value: "7", required: true },
        { name: "count", label: "codeCount", type: "number", value: "1", required: true, hint: "hint.code_count" },
        ...limitFields(),
      ], "add", async (v) => {
        const made = await call("POST", "/v1/access-codes", {
          channel_id: Number(v.channel_id), days: wholeNumber(v.days), count: wholeNumber(v.count), ...limits(v),
        });
        return t("codesMade", { count: number(made.items.length) });
      })));
  }
  return listView(url, {
    id: "access-codes", path: "/v1/access-codes", before,
    filters: [
      { name: "channel", label: "channel", choices: channelChoices(channelList) },
      { name: "active", label: "status", choices: [{ value: "true", text: t("enabled") }, { value: "false", text: t("disabled") }] },
    ],
    columns: [
      { label: "couponCode", value: (c) => element("code", { dir: "ltr", text: c.code }) },
      { label: "channel", value: (c) => element("bdi", { text: c.channel_title }) },
      { label: "codeDays", value: (c) => number(c.days) },
      { label: "couponUses", sort: "uses", value: (c) => element("a", { href: `/access-code-uses?code=${c.id}`,
        text: `${number(c.uses)} / ${number(c.max_uses)}` }) },
      { label: "couponExpires", value: (c) => when(c.expires_at) },
      { label: "codeLabel", value: (c) => element("bdi", { text: c.label ?? "" }) },
      { label: "codeLink", value: (c) => c.link ? element("a", { href: c.link, dir: "ltr", text: t("startLink") }) : "" },
      { label: "status", value: (c) => badge(c.active ? "enabled" : "disabled", undefined, { "data-standing": c.active ? "on" : "off" }) },
    ],
    actions: admin ? (c) => [
      editRow("edit", () => formOf(`edit-code-${c.id}`, limitFields(c), "save", async (v) => {
        await call("PATCH", `/v1/access-codes/${c.id}`, limits(v));
        return t("saved");
      })),
      actionButton(c.active ? "deactivate" : "activate", () => call("PATCH", `/v1/access-codes/${c.id}`, { active: !c.active }), { confirm: c.active }),
    ] : null,
  });
}

/** @param {URL} url */
export async function accessCodeUses(url) {
  const codeList = await everything("/v1/access-codes");
  return listView(url, {
    id: "access-code-uses", path: "/v1/access-code-uses", csv: "/v1/exports/access-code-uses.csv",
    filters: [{ name: "code", label: "couponCode", choices: codeList.map((c) => ({ value: String(c.id), text: c.code })) }],
    columns: [
      { label: "couponCode", value: (u) => element("code", { dir: "ltr", text: u.code }) },
      { label: "person", value: (u) => person({ telegram_user_id: u.telegram_user_id, person: { first_name: u.first_name, last_name: null, username: u.username } }) },
      { label: "channel", value: (u) => element("bdi", { text: u.channel_title }) },
      { label: "codeDays", value: (u) => number(u.days) },
      { label: "created", sort: "used_at", value: (u) => when(u.used_at) },
    ],
    after: [element("p", {}, words("a", "toCodes", { href: "/access-codes" }))],
  });
}
