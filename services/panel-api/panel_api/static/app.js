// @ts-check
// The owner's panel: signing in and out, the views by address, the header's menu and language.
import { call, may, renew, session, signIn, signOut } from "./api.js";
import { byId, element, show, words } from "./dom.js";
import { chosenLanguage, number, setLanguage, t } from "./i18n.js";
import { formOf } from "./forms.js";
import { afterEach, beforeEach, open, reload, route } from "./router.js";
import { order, orders, slots } from "./views/adshop.js";
import { account, audit, bots, deadUpdates, team, workspace } from "./views/admin.js";
import { botTexts } from "./views/bot-texts.js";
import { broadcast, broadcasts } from "./views/broadcasts.js";
import { campaign, campaigns } from "./views/campaigns.js";
import { plans } from "./views/plans.js";
import { coupons, couponUses } from "./views/coupons.js";
import { accessCodes, accessCodeUses } from "./views/access-codes.js";
import { stats } from "./views/stats.js";
import { admission, channel, channels, contents } from "./views/channels.js";
import { dashboard } from "./views/dashboard.js";
import { accessEvents, invoices, memberships, payments, people, personPage, reconcile } from "./views/ledger.js";

const main = byId("view");
const pages = byId("pages");
const menu = byId("menu");
const signOutButton = byId("sign-out");
const languagePicker = /** @type {HTMLSelectElement} */ (byId("language"));

/**
 * A view that only `role` and above may open: others get the page that says so, and its link
 * is hidden from them.
 * @param {string} role @param {(url: URL, id: number) => Promise<Node[]>} render
 */
function only(role, render) {
  return async (/** @type {URL} */ url, /** @type {number} */ id) => may(role)
    ? render(url, id)
    : [words("p", "ownersOnly", { class: "empty" })];
}

route("/", { title: "dashboard", render: dashboard });
route("/bots", { title: "bots", render: bots });
route("/bot-texts", { title: "botTexts", render: botTexts });
route("/channels", { title: "channels", render: channels });
route("/channels/:id", { title: "channel", render: channel });
route("/plans", { title: "plans", render: plans });
route("/coupons", { title: "coupons", render: coupons });
route("/coupon-uses", { title: "couponUsesPage", render: couponUses });
route("/access-codes", { title: "accessCodes", render: accessCodes });
route("/access-code-uses", { title: "codeUsesPage", render: accessCodeUses });
route("/contents", { title: "contents", render: contents });
route("/campaigns", { title: "campaigns", render: campaigns });
route("/campaigns/:id", { title: "campaign", render: campaign });
route("/broadcasts", { title: "broadcasts", render: broadcasts });
route("/stats", { title: "stats", render: stats });
route("/broadcasts/:id", { title: "broadcastPage", render: broadcast });
route("/people", { title: "people", render: people });
route("/people/:id", { title: "personPage", render: personPage });
route("/memberships", { title: "memberships", render: memberships });
route("/invoices", { title: "invoices", render: invoices });
route("/payments", { title: "payments", render: payments });
route("/access-events", { title: "accessEvents", render: accessEvents });
route("/reconcile", { title: "reconcilePage", render: only("admin", reconcile) });
route("/orders", { title: "orders", render: orders });
route("/orders/:id", { title: "adOrder", render: order });
route("/slots", { title: "slots", render: slots });
route("/admission", { title: "admission", render: admission });
route("/dead-updates", { title: "deadUpdates", render: only("admin", deadUpdates) });
route("/team", { title: "team", render: only("owner", team) });
route("/audit", { title: "audit", render: only("owner", audit) });
route("/workspace", { title: "workspace", render: workspace });
route("/account", { title: "account", render: account });

// Who is signed in, and the workspace's zone and language, before the first view.
beforeEach(async () => {
  if (session.me) return;
  session.me = await call("GET", "/v1/me");
  const settings = await call("GET", "/v1/workspace");
  session.zone = settings.time_zone || "UTC";
  setLanguage(chosenLanguage(settings.language));
  languagePicker.value = document.documentElement.lang;
  for (const link of pages.querySelectorAll("a")) {
    if (link instanceof HTMLElement) link.hidden = Boolean(link.dataset.role && !may(link.dataset.role));
  }
  signedIn(true);
});

// What needs the owner, counted beside the page that lists it (`data-attention` names the
// count), fetched again after each view is drawn: a write there changes it.
afterEach(async () => {
  /** @type {Record<string, number>} */
  let counts;
  try {
    counts = await call("GET", "/v1/attention");
  } catch {
    return;
  }
  for (const link of pages.querySelectorAll("a[data-attention]")) {
    if (!(link instanceof HTMLElement)) continue;
    const count = counts[link.dataset.attention ?? ""] ?? 0;
    let badge = link.querySelector(".needs");
    if (!count) {
      badge?.remove();
      continue;
    }
    if (!badge) {
      badge = document.createElement("span");
      badge.className = "needs";
      link.append(badge);
    }
    // The figure for the eye, the words for a screen reader.
    badge.replaceChildren(
      element("span", { "aria-hidden": "true", text: number(count) }),
      element("span", { class: "hidden-label", text: t("needsYou", { count: number(count) }) }));
  }
});

/** The header for a signed-in member, or for nobody. @param {boolean} yes */
function signedIn(yes) {
  signOutButton.hidden = !yes;
  pages.hidden = !yes;
  menu.hidden = !yes;
}

// After signing in: the view at the address, with the focus on its heading.
const enter = () => open(location.pathname + location.search, { focus: true });

function signInView() {
  signedIn(false);
  const form = formOf("sign-in", [
    { name: "email", label: "email", type: "email", autocomplete: "username", required: true },
    { name: "password", label: "password", type: "password", autocomplete: "current-password", required: true },
  ], "signIn", (v) => signIn(v.email, v.password), { then: enter });
  const first = words("button", "firstStart", { type: "button", class: "link", id: "first-start" });
  first.addEventListener("click", setupView);
  main.replaceChildren(words("h1", "signIn"), form, first);
  document.title = `${t("signIn")} · ${t("brand")}`;
}

function setupView() {
  const form = formOf("setup", [
    { name: "code", label: "setupCode", required: true },
    { name: "email", label: "email", type: "email", autocomplete: "username", required: true },
    { name: "password", label: "password", type: "password", autocomplete: "new-password", required: true },
  ], "setUp", async (v) => {
    await call("POST", "/v1/setup", { code: v.code, email: v.email, password: v.password }, { retry: false });
    await signIn(v.email, v.password);
  }, { then: enter });
  const back = words("button", "backToSignIn", { type: "button", class: "link" });
  back.addEventListener("click", signInView);
  main.replaceChildren(words("h1", "setUp"), form, back);
}

// A session ended elsewhere (signed out in another tab): the sign-in form, saying why.
session.onEnded = () => {
  signInView();
  byId("message").textContent = t("sessionEnded");
  byId("message").hidden = false;
};

// Links within the page open their view without reloading it.
document.addEventListener("click", (event) => {
  const target = event.target instanceof Element ? event.target : null;
  const link = target?.closest("a[href^='/']");
  if (!link || event.ctrlKey || event.metaKey || event.shiftKey || !session.me) return;
  event.preventDefault();
  open(link.getAttribute("href") ?? "/", { push: true });
});

window.addEventListener("popstate", () => {
  if (session.me) open(location.pathname + location.search);
});

languagePicker.addEventListener("change", () => {
  setLanguage(languagePicker.value, true);
  // Numbers, dates and words in the view are drawn for a language: draw it again.
  if (session.me) reload();
});

menu.addEventListener("click", () => {
  const opened = pages.classList.toggle("open");
  menu.setAttribute("aria-expanded", String(opened));
});

signOutButton.addEventListener("click", async () => {
  await signOut();
  show(null);
  signInView();
});

setLanguage(chosenLanguage("en"));
languagePicker.value = document.documentElement.lang;
if (await renew()) {
  await open(location.pathname + location.search);
  if (!session.me) signInView();
} else {
  signInView();
}
