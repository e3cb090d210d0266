// The owner's panel: the access token in memory only, renewed by the refresh cookie before it
// runs out and after a reload; every problem answer shown from its title and detail.
import { chosenLanguage, number, setLanguage, t } from "/assets/i18n.js";

const CSRF = { "X-Requested-With": "gatehouse" };
const session = { token: null, timer: null, me: null };
const view = document.getElementById("view");
const message = document.getElementById("message");

class ApiProblem extends Error {
  constructor(status, body, retryAfter) {
    super(body.detail || body.title || `HTTP ${status}`);
    this.status = status;
    this.title = body.title || `HTTP ${status}`;
    this.detail = body.detail || "";
    this.retryAfter = retryAfter;
  }
}

function show(error) {
  if (!error) { message.hidden = true; message.textContent = ""; return; }
  let text = error instanceof ApiProblem ? `${error.title}: ${error.detail}` : t("unreachable");
  if (error instanceof ApiProblem && error.status === 429 && error.retryAfter) {
    text += " " + t("wait", { seconds: number(error.retryAfter) });
  }
  message.textContent = text;
  message.hidden = false;
}

async function call(method, path, body, { retry = true, headers = {} } = {}) {
  const request = { method, headers: { ...headers }, credentials: "same-origin" };
  if (session.token) request.headers.Authorization = `Bearer ${session.token}`;
  if (body !== undefined) {
    request.headers["Content-Type"] = "application/json";
    request.body = JSON.stringify(body);
  }
  const response = await fetch(path, request);
  if (response.status === 401 && retry && session.token && await renew()) {
    return call(method, path, body, { retry: false, headers });
  }
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : null;
  if (!response.ok) {
    throw new ApiProblem(response.status, parsed || {}, response.headers.get("Retry-After"));
  }
  return parsed;
}

function keep(tokens) {
  session.token = tokens.access_token;
  clearTimeout(session.timer);
  // A minute early, so a request never leaves with a token about to die.
  const wait = Math.max(5, tokens.expires_in - 60) * 1000;
  session.timer = setTimeout(renew, wait);
}

async function renew() {
  try {
    const tokens = await call("POST", "/v1/auth/refresh", undefined, { retry: false, headers: CSRF });
    keep(tokens);
    return true;
  } catch {
    session.token = null;
    return false;
  }
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "text") node.textContent = value; else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

function signInView() {
  document.getElementById("sign-out").hidden = true;
  document.getElementById("pages").hidden = true;
  const email = element("input", { type: "email", name: "email", autocomplete: "username", required: "" });
  const password = element("input", { type: "password", name: "password", autocomplete: "current-password", required: "" });
  const form = element(
    "form", { id: "sign-in" },
    element("label", {}, element("span", { "data-text": "email", text: t("email") }), email),
    element("label", {}, element("span", { "data-text": "password", text: t("password") }), password),
    element("button", { type: "submit", "data-text": "signIn", text: t("signIn") }),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      keep(await call("POST", "/v1/auth/login", { email: email.value, password: password.value }, { retry: false }));
      show(null);
      await openView(location.pathname);
    } catch (error) {
      show(error);
    }
  });
  const first = element("button", { type: "button", class: "link", id: "first-start", "data-text": "firstStart", text: t("firstStart") });
  first.addEventListener("click", setupView);
  view.replaceChildren(form, first);
}

function setupView() {
  const code = element("input", { name: "code", required: "" });
  const email = element("input", { type: "email", name: "email", autocomplete: "username", required: "" });
  const password = element("input", { type: "password", name: "password", autocomplete: "new-password", required: "" });
  const form = element(
    "form", { id: "setup" },
    element("label", {}, element("span", { "data-text": "setupCode", text: t("setupCode") }), code),
    element("label", {}, element("span", { "data-text": "email", text: t("email") }), email),
    element("label", {}, element("span", { "data-text": "password", text: t("password") }), password),
    element("button", { type: "submit", "data-text": "setUp", text: t("setUp") }),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await call("POST", "/v1/setup", { code: code.value.trim(), email: email.value, password: password.value }, { retry: false });
      keep(await call("POST", "/v1/auth/login", { email: email.value, password: password.value }, { retry: false }));
      show(null);
      await openView(location.pathname);
    } catch (error) {
      show(error);
    }
  });
  const back = element("button", { type: "button", class: "link", "data-text": "backToSignIn", text: t("backToSignIn") });
  back.addEventListener("click", signInView);
  view.replaceChildren(form, back);
}

function tile(key, value) {
  return element("div", { class: "tile" },
    element("div", { "data-text": key, text: t(key) }),
    element("div", { class: "figure", "data-figure": key, "data-value": String(value), text: number(value) }));
}

const RANK = { viewer: 0, editor: 1, admin: 2, owner: 3 };

function may(role) {
  return session.me && RANK[session.me.role] >= RANK[role];
}

async function signedIn() {
  if (session.me) return;
  session.me = await call("GET", "/v1/me");
  const workspace = await call("GET", "/v1/workspace");
  setLanguage(chosenLanguage(workspace.language));
  document.getElementById("language").value = document.documentElement.lang;
  document.getElementById("sign-out").hidden = false;
  document.getElementById("pages").hidden = false;
}

const VIEWS = { "/": dashboard, "/bots": botsView, "/workspace": workspaceView };

async function openView(path) {
  await signedIn();
  const render = VIEWS[path] || dashboard;
  await render();
}

async function dashboard() {
  const bots = await call("GET", "/v1/bots?limit=200");
  view.replaceChildren(
    element("p", { id: "who", text: t("signedInAs", { email: session.me.email, role: session.me.role }) }),
    element("div", { class: "tiles" }, tile("bots", bots.items.length)),
  );
}

function cell(text) {
  return element("td", { text: text ?? t("none") });
}

async function botsView() {
  const bots = await call("GET", "/v1/bots?limit=200");
  const rows = bots.items.map((bot) => element("tr", { "data-bot": bot.username },
    cell("@" + bot.username), cell(bot.mode), cell(bot.status), cell(bot.last_error)));
  const table = element("table", { id: "bots" },
    element("thead", {}, element("tr", {},
      ...["username", "mode", "status", "lastError"].map((key) => element("th", { "data-text": key, text: t(key) })))),
    element("tbody", {}, ...rows));
  const parts = [table];
  if (may("admin")) {
    const token = element("input", { name: "token", required: "", autocomplete: "off" });
    const mode = element("select", { name: "mode" },
      element("option", { value: "polling", text: "polling" }), element("option", { value: "webhook", text: "webhook" }));
    const form = element("form", { id: "add-bot" },
      element("label", {}, element("span", { "data-text": "token", text: t("token") }), token),
      element("label", {}, element("span", { "data-text": "mode", text: t("mode") }), mode),
      element("button", { type: "submit", "data-text": "add", text: t("add") }));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        await call("POST", "/v1/bots", { token: token.value.trim(), mode: mode.value });
        show(null);
        await botsView();
      } catch (error) {
        show(error);
      }
    });
    parts.push(element("h2", { "data-text": "addBot", text: t("addBot") }), form);
  }
  view.replaceChildren(...parts);
}

async function workspaceView() {
  const workspace = await call("GET", "/v1/workspace");
  const owner = may("owner");
  const field = (key, name, value) => {
    const input = element("input", { name, value: value ?? "" });
    if (!owner) input.setAttribute("readonly", "");
    return [input, element("label", {}, element("span", { "data-text": key, text: t(key) }), input)];
  };
  const [zone, zoneLabel] = field("timeZone", "time_zone", workspace.time_zone);
  const [address, addressLabel] = field("tronAddress", "tron_address", workspace.tron_address);
  const language = element("select", { name: "language" },
    element("option", { value: "en", text: "English" }), element("option", { value: "fa", text: "فارسی" }));
  language.value = workspace.language;
  if (!owner) language.setAttribute("disabled", "");
  const form = element("form", { id: "workspace" }, zoneLabel,
    element("label", {}, element("span", { "data-text": "language", text: t("language") }), language),
    addressLabel);
  if (owner) {
    form.append(element("button", { type: "submit", "data-text": "save", text: t("save") }));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const change = { time_zone: zone.value.trim(), language: language.value };
      if (address.value.trim()) change.tron_address = address.value.trim();
      try {
        await call("PATCH", "/v1/workspace", change);
        show(null);
        form.append(element("p", { id: "saved", text: t("saved") }));
      } catch (error) {
        show(error);
      }
    });
  }
  view.replaceChildren(form);
}

document.getElementById("pages").addEventListener("click", async (event) => {
  const link = event.target.closest("a[href]");
  if (!link) return;
  event.preventDefault();
  history.pushState(null, "", link.getAttribute("href"));
  try { await openView(location.pathname); } catch (error) { show(error); }
});

window.addEventListener("popstate", async () => {
  try { await openView(location.pathname); } catch (error) { show(error); }
});

document.getElementById("language").addEventListener("change", (event) => {
  setLanguage(event.target.value, true);
  for (const node of document.querySelectorAll("[data-figure]")) {
    node.textContent = number(Number(node.dataset.value));
  }
  if (session.me) {
    document.getElementById("who").textContent =
      t("signedInAs", { email: session.me.email, role: session.me.role });
  }
});

document.getElementById("sign-out").addEventListener("click", async () => {
  try { await call("POST", "/v1/auth/logout", undefined, { retry: false, headers: CSRF }); } catch { /* gone already */ }
  clearTimeout(session.timer);
  session.token = null;
  session.me = null;
  signInView();
});

setLanguage(chosenLanguage("en"));
document.getElementById("language").value = document.documentElement.lang;
if (await renew()) {
  try { await openView(location.pathname); } catch (error) { show(error); signInView(); }
} else {
  signInView();
}
