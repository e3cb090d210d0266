// @ts-check
// Plans: what the bot offers for each paid channel (a month, a quarter, a year), each with its
// price, the gateways it is sold through and its place in the bot's list; on sale or not, and
// which one is the channel's default.
import { call, may } from "../api.js";
import { element, words } from "../dom.js";
import { actionButton, adding, editRow, formOf } from "../forms.js";
import { list, money, number, t } from "../i18n.js";
import { listView } from "../list.js";
import { badge, channelChoices, everything, wholeNumber } from "./common.js";

/** The gateways billing has on, with their names; none when billing cannot say right now.
 * @returns {Promise<{ value: string, text: string }[]>} */
async function gatewayChoices() {
  try {
    const { gateways, titles } = await call("GET", "/v1/gateways");
    return gateways.map((/** @type {string} */ g) => ({ value: g, text: titles?.[g] ?? g }));
  } catch {
    return [];
  }
}

/** The fields of a plan, with what it holds now (`plan`) or a new one's defaults; `paidChannels`
 * are what a bundle may cover.
 * @param {{ value: string, text: string }[]} gateways @param {{ value: string, text: string }[]} paidChannels
 * @param {any} [plan] @returns {import("../forms.js").Field[]} */
function planFields(gateways, paidChannels, plan) {
  // A new plan picks its kind; a trial's price and gateways are not asked, a bundle's channels are.
  /** @type {[string, string[]] | undefined} */
  const paid = plan ? undefined : ["kind", ["regular", "bundle"]];
  /** @type {[string, string[]] | undefined} */
  const bundled = plan ? undefined : ["kind", ["bundle"]];
  const priced = plan?.kind !== "trial";
  const bundle = !plan || plan.kind === "bundle";
  return [
    ...(plan ? [] : [{ name: "kind", label: "planKind", choices: ["regular", "trial", "bundle"].map((k) => ({ value: k, text: t(`kind.${k}`) })), hint: "hint.plan_trial" }]),
    { name: "name", label: "planName", value: plan?.name ?? "", required: true },
    ...(priced ? [
      { name: "price", label: "price", value: plan?.price ?? "", type: "amount", required: true, ltr: true, showIf: paid },
      { name: "currency", label: "currency", value: plan?.currency ?? "USD", required: true, ltr: true, showIf: paid },
    ] : []),
    ...(bundle ? [{ name: "channels", label: "bundleChannels", type: "checks", choices: paidChannels,
      value: (plan?.channels ?? []).join(","), hint: "hint.bundle_channels", showIf: bundled }] : []),
    { name: "period_days", label: "periodDays", type: "number", value: String(plan?.period_days ?? 30), required: true },
    { name: "grace_days", label: "graceDays", type: "number", value: String(plan?.grace_days ?? 3), required: true },
    ...(gateways.length && priced ? [{ name: "gateways", label: "soldThrough", type: "checks", choices: gateways,
      value: (plan?.gateways ?? []).join(","), hint: "hint.plan_gateways", showIf: paid }] : []),
    { name: "position", label: "planPosition", type: "number", value: String(plan?.position ?? 0), hint: "hint.plan_position" },
  ];
}

/** The API's body from a plan form's values (a trial's without price, currency or gateways; a
 * bundle's with its channels).
 * @param {Record<string, string>} v */
function planBody(v) {
  /** @type {Record<string, unknown>} */
  const body = {
    name: v.name, period_days: wholeNumber(v.period_days), grace_days: wholeNumber(v.grace_days),
    position: wholeNumber(v.position || "0"),
  };
  if (v.kind) body.kind = v.kind;
  if (v.kind === "trial") return body;
  if ("price" in v) Object.assign(body, { price: v.price, currency: v.currency.toUpperCase() });
  if ("gateways" in v) body.gateways = v.gateways ? v.gateways.split(",") : null;
  // None ticked: the API says at the field that a bundle needs them.
  if ("channels" in v && v.channels) body.channels = v.channels.split(",").map(Number);
  return body;
}

/** @param {{ active: boolean, is_default: boolean }} p */
function standing(p) {
  const key = p.is_default ? "defaultPlan" : p.active ? "onSale" : "offSale";
  return badge(key, undefined, { "data-standing": key });
}

/** @param {URL} url */
export async function plans(url) {
  const admin = may("admin");
  const [channelList, gateways] = await Promise.all([everything("/v1/channels"), admin ? gatewayChoices() : []]);
  const titles = Object.fromEntries(gateways.map((g) => [g.value, g.text]));
  const paidChannels = channelChoices(channelList.filter((c) => c.is_paid));
  const before = [words("p", "plansIntro", { class: "intro" })];
  if (admin) {
    before.push(!channelList.length
      ? words("p", "addChannelFirst", { class: "empty" })
      : adding("addPlan", formOf("add-plan", [
        { name: "channel_id", label: "channel", choices: channelChoices(channelList) },
        ...planFields(gateways, paidChannels),
      ], "add", async (v) => {
        const made = await call("POST", "/v1/plans", { channel_id: Number(v.channel_id), ...planBody(v) });
        return t("planMade", { name: made.name, channel: made.channel_title });
      })));
  }
  return listView(url, {
    id: "plans", path: "/v1/plans", before,
    filters: [
      { name: "channel", label: "channel", choices: channelChoices(channelList) },
      { name: "active", label: "status", choices: [{ value: "true", text: t("onSale") }, { value: "false", text: t("offSale") }] },
    ],
    columns: [
      { label: "name", sort: "name", value: (p) => element("bdi", { text: p.name }) },
      { label: "channel", value: (p) => p.kind === "bundle"
        ? element("span", {}, ...p.channels.flatMap((/** @type {number} */ id, /** @type {number} */ n) => [
          ...(n ? [t("listSep")] : []), element("a", { href: `/channels/${id}` }, element("bdi", { text: p.channel_titles[n] }))]))
        : element("a", { href: `/channels/${p.channel_id}` }, element("bdi", { text: p.channel_title })) },
      { label: "planKind", value: (p) => element("span", { "data-kind": p.kind, text: t(`kind.${p.kind}`) }) },
      { label: "price", value: (p) => p.kind === "trial" ? t("free") : money(p.price, p.currency) },
      { label: "periodDays", value: (p) => number(p.period_days) },
      { label: "soldThrough", value: (p) => p.kind === "trial" ? "" : p.currency === "XTR" ? t("telegramStars") : p.gateways ? list(p.gateways.map((/** @type {string} */ g) => titles[g] ?? g)) : t("allGateways") },
      { label: "trialsTaken", value: (p) => p.kind === "trial" ? number(p.taken) : "" },
      { label: "planPosition", sort: "position", value: (p) => number(p.position) },
      { label: "status", value: (p) => standing(p) },
    ],
    actions: admin ? (p) => [
      editRow("edit", () => formOf(`edit-plan-${p.id}`, planFields(gateways, paidChannels, p), "save", async (v) => {
        await call("PATCH", `/v1/plans/${p.id}`, planBody(v));
        return t("saved");
      })),
      ...(p.active && !p.is_default && p.kind === "regular" ? [actionButton("makeDefault", () => call("PATCH", `/v1/plans/${p.id}`, { is_default: true }))] : []),
      ...(p.is_default ? [] : [actionButton(p.active ? "stopSelling" : "sellAgain",
        () => call("PATCH", `/v1/plans/${p.id}`, { active: !p.active }), { confirm: p.active })]),
    ] : null,
  });
}
