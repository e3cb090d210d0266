// @ts-check
// Coupons: a code that takes a percentage or an amount off a plan's price, with its limits,
// and each use of one (who, which invoice, paid or not), with a CSV of them.
import { call, may } from "../api.js";
import { element, words } from "../dom.js";
import { actionButton, adding, editRow, formOf } from "../forms.js";
import { money, number, percent, t } from "../i18n.js";
import { listView } from "../list.js";
import { badge, dayEnd, everything, person, when, wholeNumber } from "./common.js";

const CUSTOMERS = ["any", "new", "lapsed", "new_or_lapsed"];

/** @param {any[]} planList */
function planChoices(planList) {
  return planList.map((p) => ({ value: String(p.id), text: `${p.channel_title} · ${p.name}` }));
}

/** The limits a coupon keeps when edited. @param {any[]} planList @param {any} [c] */
function limitFields(planList, c) {
  return [
    { name: "expires_at", label: "couponExpires", type: "date", value: c?.expires_at ? c.expires_at.slice(0, 10) : "" },
    { name: "max_redemptions", label: "couponTotal", type: "number", value: c?.max_redemptions ? String(c.max_redemptions) : "", hint: "hint.coupon_total" },
    { name: "per_person", label: "couponPerPerson", type: "number", value: String(c?.per_person ?? 1) },
    { name: "plan_ids", label: "couponPlans", type: "checks", choices: planChoices(planList), value: (c?.plan_ids ?? []).join(","), hint: "hint.coupon_plans" },
    { name: "customers", label: "couponCustomers", options: CUSTOMERS.map((k) => `customers.${k}`), value: `customers.${c?.customers ?? "any"}` },
  ];
}

/** @param {Record<string, string>} v */
function limits(v) {
  return {
    expires_at: dayEnd(v.expires_at),
    max_redemptions: v.max_redemptions ? wholeNumber(v.max_redemptions) : null,
    per_person: wholeNumber(v.per_person || "1"),
    plan_ids: v.plan_ids ? v.plan_ids.split(",").map(Number) : null,
    customers: v.customers.replace("customers.", ""),
  };
}

/** @param {any} c */
function off(c) {
  return c.percent_off ? percent(c.percent_off / 100) : money(c.amount_off, c.currency);
}

/** @param {URL} url */
export async function coupons(url) {
  const admin = may("admin");
  const planList = await everything("/v1/plans?active=true");
  const before = [words("p", "couponsIntro", { class: "intro" })];
  if (admin) {
    before.push(adding("addCoupon", formOf("add-coupon", [
      { name: "code", label: "couponCode", required: true, ltr: true, hint: "hint.coupon_code" },
      { name: "kind", label: "couponKind", options: ["percentOff", "amountOff"], value: "percentOff" },
      { name: "percent_off", label: "percentOff", type: "number", required: true, showIf: ["kind", ["percentOff"]] },
      { name: "amount_off", label: "amountOff", type: "amount", required: true, ltr: true, showIf: ["kind", ["amountOff"]] },
      { name: "currency", label: "currency", value: "USD", required: true, ltr: true, showIf: ["kind", ["amountOff"]] },
      ...limitFields(planList),
    ], "add", async (v) => {
      const discount = v.kind === "percentOff"
        ? { percent_off: wholeNumber(v.percent_off) }
        : { amount_off: v.amount_off, currency: v.currency.toUpperCase() };
      const made = await call("POST", "/v1/coupons", { code: v.code, ...discount, ...limits(v) });
      return t("couponMade", { code: made.code });
    })));
  }
  return listView(url, {
    id: "coupons", path: "/v1/coupons", before,
    filters: [{ name: "active", label: "status", choices: [{ value: "true", text: t("enabled") }, { value: "false", text: t("disabled") }] }],
    columns: [
      { label: "couponCode", sort: "code", value: (c) => element("code", { dir: "ltr", text: c.code }) },
      { label: "discount", value: (c) => off(c) },
      { label: "couponUses", sort: "uses", value: (c) => element("a", { href: `/coupon-uses?coupon=${c.id}`,
        text: c.max_redemptions ? `${number(c.uses)} / ${number(c.max_redemptions)}` : number(c.uses) }) },
      { label: "paidUses", value: (c) => number(c.paid) },
      { label: "couponExpires", value: (c) => when(c.expires_at) },
      { label: "couponCustomers", value: (c) => t(`customers.${c.customers}`) },
      { label: "status", value: (c) => badge(c.active ? "enabled" : "disabled", undefined, { "data-standing": c.active ? "on" : "off" }) },
    ],
    actions: admin ? (c) => [
      editRow("edit", () => formOf(`edit-coupon-${c.id}`, limitFields(planList, c), "save", async (v) => {
        await call("PATCH", `/v1/coupons/${c.id}`, limits(v));
        return t("saved");
      })),
      actionButton(c.active ? "deactivate" : "activate", () => call("PATCH", `/v1/coupons/${c.id}`, { active: !c.active }), { confirm: c.active }),
    ] : null,
  });
}

/** @param {URL} url */
export async function couponUses(url) {
  const couponList = await everything("/v1/coupons");
  return listView(url, {
    id: "coupon-uses", path: "/v1/coupon-redemptions", csv: "/v1/exports/coupon-redemptions.csv",
    filters: [{ name: "coupon", label: "couponCode", choices: couponList.map((c) => ({ value: String(c.id), text: c.code })) }],
    columns: [
      { label: "couponCode", value: (r) => element("code", { dir: "ltr", text: couponList.find((c) => c.id === r.coupon_id)?.code ?? "" }) },
      { label: "person", value: (r) => person({ telegram_user_id: r.telegram_user_id, person: { first_name: r.first_name, last_name: null, username: r.username } }) },
      { label: "plan", value: (r) => element("bdi", { text: `${r.channel_title} · ${r.plan_name}` }) },
      { label: "listPrice", value: (r) => money(r.list_price, r.currency) },
      { label: "discount", value: (r) => money(r.discount, r.currency) },
      { label: "amount", value: (r) => money(r.amount, r.currency) },
      { label: "status", value: (r) => t(r.released_at ? "released" : r.invoice_status) },
      { label: "created", sort: "redeemed_at", value: (r) => when(r.redeemed_at) },
    ],
    after: [element("p", {}, words("a", "toCoupons", { href: "/coupons" }))],
  });
}
