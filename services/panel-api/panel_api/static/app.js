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
      await dashboard();
    } catch (error) {
      show(error);
    }
  });
  view.replaceChildren(form);
}

function tile(key, value) {
  return element("div", { class: "tile" },
    element("div", { "data-text": key, text: t(key) }),
    element("div", { class: "figure", "data-figure": key, "data-value": String(value), text: number(value) }));
}

async function dashboard() {
  session.me = await call("GET", "/v1/me");
  const workspace = await call("GET", "/v1/workspace");
  const bots = await call("GET", "/v1/bots?limit=200");
  setLanguage(chosenLanguage(workspace.language));
  document.getElementById("language").value = document.documentElement.lang;
  document.getElementById("sign-out").hidden = false;
  view.replaceChildren(
    element("p", { id: "who", text: t("signedInAs", { email: session.me.email, role: session.me.role }) }),
    element("div", { class: "tiles" }, tile("bots", bots.items.length)),
  );
}

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
  try { await dashboard(); } catch (error) { show(error); signInView(); }
} else {
  signInView();
}
