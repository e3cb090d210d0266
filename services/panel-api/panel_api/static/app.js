// The owner's panel: the access token in memory only, renewed by the refresh cookie before it
// runs out and after a reload; every problem answer shown from its title and detail.
import { chosenLanguage, dateTime, money, number, setLanguage, t } from "/assets/i18n.js";

const CSRF = { "X-Requested-With": "gatehouse" };
const session = { token: null, timer: null, me: null, zone: "UTC" };
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

function tile(key, value, href) {
  return element("a", { class: "tile", href, "data-tile": key },
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
  session.zone = workspace.time_zone || "UTC";
  setLanguage(chosenLanguage(workspace.language));
  document.getElementById("language").value = document.documentElement.lang;
  document.getElementById("sign-out").hidden = false;
  document.getElementById("pages").hidden = false;
}

const VIEWS = {
  "/": dashboard,
  "/bots": botsView,
  "/channels": channelsView,
  "/contents": contentsView,
  "/people": peopleView,
  "/memberships": membershipsView,
  "/invoices": invoicesView,
  "/payments": paymentsView,
  "/access-events": accessEventsView,
  "/orders": ordersView,
  "/slots": slotsView,
  "/admission": admissionView,
  "/dead-updates": deadUpdatesView,
  "/team": teamView,
  "/audit": auditView,
  "/workspace": workspaceView,
};

// Views open one after another: a view still waiting for its data when the next is asked for
// would otherwise finish last and paint itself over it.
let opening = Promise.resolve();

function openView(path) {
  const opened = opening.then(() => showView(path));
  opening = opened.catch(() => {});
  return opened;
}

async function showView(path) {
  await signedIn();
  const render = VIEWS[path.split("?")[0]] || dashboard;
  for (const link of document.querySelectorAll("#pages a")) {
    link.toggleAttribute("aria-current", link.getAttribute("href") === location.pathname);
    const owner = link.dataset.role && !may(link.dataset.role);
    link.hidden = Boolean(owner);
  }
  await render();
}

async function dashboard() {
  const board = await call("GET", "/v1/dashboard");
  const tiles = [
    ["membersActive", board.members_active, "/memberships?status=active"],
    ["membersGrace", board.members_grace, "/memberships?status=grace"],
    ["ordersWaiting", board.ad_orders_waiting, "/orders?status=requested"],
    ["accessFailing", board.access_events_failing, "/access-events?state=failed"],
    ["deadUpdates", board.dead_updates, "/dead-updates"],
    ["botProblems", board.bots_with_problems, "/bots"],
  ];
  view.replaceChildren(
    element("p", { id: "who", text: t("signedInAs", { email: session.me.email, role: session.me.role }) }),
    element("div", { class: "tiles" }, ...tiles.map(([key, value, href]) => tile(key, value, href))),
    element("h2", { "data-text": "revenue", text: t("revenue") }),
    revenueChart(board.revenue, board.time_zone),
  );
}

const SVG = "http://www.w3.org/2000/svg";
const COLOURS = ["#2456c8", "#c8242f", "#1f8a4c", "#b8860b", "#6b3fa0"];

function svg(tag, attributes = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  return node;
}

// The last 30 days in the workspace's time zone, oldest first, as YYYY-MM-DD.
function lastDays(timeZone) {
  const today = new Intl.DateTimeFormat("en-CA", { timeZone }).format(new Date());
  const [y, m, d] = today.split("-").map(Number);
  return Array.from({ length: 30 }, (_, n) =>
    new Date(Date.UTC(y, m - 1, d - 29 + n)).toISOString().slice(0, 10));
}

function revenueChart(revenue, timeZone) {
  const days = lastDays(timeZone);
  const currencies = [...new Set(revenue.map((r) => r.currency))].sort();
  const width = 600, height = 220, pad = 30;
  const amounts = {};
  for (const r of revenue) amounts[`${r.currency} ${r.day}`] = Number(r.amount_minor) / 100;
  const top = Math.max(1, ...revenue.map((r) => Number(r.amount_minor) / 100));
  const x = (n) => pad + (n * (width - 2 * pad)) / (days.length - 1);
  const y = (v) => height - pad - (v * (height - 2 * pad)) / top;
  const chart = svg("svg", { id: "revenue", viewBox: `0 0 ${width} ${height}`, role: "img" });
  chart.append(svg("line", { x1: pad, y1: height - pad, x2: width - pad, y2: height - pad, stroke: "#9aa3b2" }));
  const legend = element("ul", { class: "legend" });
  currencies.forEach((currency, index) => {
    const colour = COLOURS[index % COLOURS.length];
    const values = days.map((day) => amounts[`${currency} ${day}`] ?? 0);
    chart.append(svg("polyline", {
      points: values.map((v, n) => `${x(n).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
      fill: "none", stroke: colour, "stroke-width": 2, "data-currency": currency,
    }));
    const total = values.reduce((a, b) => a + b, 0);
    legend.append(element("li", { "data-currency": currency, text: `${currency}: ${money(total, currency)}` }));
  });
  const first = svg("text", { x: pad, y: height - 8, "font-size": 11 });
  first.textContent = dateTime(days[0] + "T12:00:00Z", "UTC").split(",")[0];
  const last = svg("text", { x: width - pad, y: height - 8, "font-size": 11, "text-anchor": "end" });
  last.textContent = dateTime(days[29] + "T12:00:00Z", "UTC").split(",")[0];
  chart.append(first, last);
  if (!currencies.length) legend.append(element("li", { "data-text": "noRevenue", text: t("noRevenue") }));
  return element("figure", { class: "chart" }, chart, legend);
}

function cell(content) {
  if (content instanceof Node) return element("td", {}, content);
  return element("td", { text: content ?? t("none") });
}

function when(value) {
  return value ? dateTime(value, session.zone) : null;
}

function actionButton(key, run) {
  const button = element("button", { type: "button", "data-action": key, "data-text": key, text: t(key) });
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await run();
      show(null);
      await openView(location.pathname + location.search);
    } catch (error) {
      show(error);
      button.disabled = false;
    }
  });
  return button;
}

// The address with `changes` to its query (null removes one), then the view drawn again.
async function navigate(changes) {
  const next = new URLSearchParams(location.search);
  for (const [name, value] of Object.entries(changes)) {
    if (value) next.set(name, value); else next.delete(name);
  }
  history.pushState(null, "", `${location.pathname}${next.size ? "?" + next : ""}`);
  try { await openView(location.pathname); } catch (error) { show(error); }
}

// A sortable column's heading is a button: the first press sorts by it ascending, the next
// descending. The API sorts, so "More" goes on in the same order.
function heading(column, sort) {
  const label = element("span", { "data-text": column.label, text: t(column.label) });
  if (!column.sort) return element("th", {}, label);
  const state = sort === column.sort ? "ascending" : sort === "-" + column.sort ? "descending" : null;
  const arrow = element("span", { class: "arrow", "aria-hidden": "true", text: { ascending: "▲", descending: "▼" }[state] ?? "" });
  const button = element("button", { type: "button", class: "sort", "data-sort": column.sort }, label, arrow);
  button.addEventListener("click", () => navigate({ sort: state === "ascending" ? "-" + column.sort : column.sort }));
  return element("th", state ? { "aria-sort": state } : {}, button);
}

// A page over one of the API's lists: a filter or a sort is a query parameter kept in the
// address, and "More" follows the answer's cursor, so a long list is never loaded whole.
async function listView({ id, path, columns, filters = [], actions = null, before = [], after = [] }) {
  const wanted = new URLSearchParams(location.search);
  const query = new URLSearchParams({ limit: "50" });
  const sort = wanted.get("sort");
  if (sort) query.set("sort", sort);
  const controls = [];
  for (const filter of filters) {
    const select = element("select", { name: filter.name, "data-filter": filter.name },
      element("option", { value: "", text: t("all") }),
      ...filter.values.map((value) => element("option", { value, text: t(value) })));
    select.value = wanted.get(filter.name) || "";
    if (select.value) query.set(filter.name, select.value);
    select.addEventListener("change", () => navigate({ [filter.name]: select.value }));
    controls.push(element("label", {}, element("span", { "data-text": filter.label, text: t(filter.label) }), select));
  }
  const body = element("tbody");
  const head = columns.map((column) => heading(column, sort));
  if (actions) head.push(element("th"));
  const table = element("table", { id },
    element("thead", {}, element("tr", {}, ...head)), body);
  const more = element("button", { type: "button", id: `${id}-more`, "data-text": "more", text: t("more"), hidden: "" });
  let cursor = null;
  const load = async () => {
    if (cursor) query.set("cursor", cursor);
    const page = await call("GET", `${path}?${query}`);
    for (const item of page.items) {
      const row = element("tr", { "data-id": String(item.id ?? "") },
        ...columns.map((column) => cell(column.value(item))));
      if (actions) row.append(element("td", { class: "actions" }, ...actions(item)));
      body.append(row);
    }
    cursor = page.next_cursor;
    more.hidden = !cursor;
  };
  more.addEventListener("click", async () => {
    try { await load(); } catch (error) { show(error); }
  });
  await load();
  const empty = body.children.length ? [] : [element("p", { class: "empty", "data-text": "nothing", text: t("nothing") })];
  view.replaceChildren(...before,
    ...(controls.length ? [element("div", { class: "filters" }, ...controls)] : []),
    table, ...empty, more, ...after);
}

function usdt(micros) {
  return money(micros / 1_000_000, "USDT");
}

async function channelsView() {
  await listView({
    id: "channels", path: "/v1/channels",
    columns: [
      { label: "title", sort: "title", value: (c) => c.title },
      { label: "username", value: (c) => c.username ? "@" + c.username : null },
      { label: "paid", value: (c) => t(c.is_paid ? "yes" : "no") },
      { label: "rights", value: (c) => rights(c) },
    ],
  });
  for (const flag of view.querySelectorAll("[data-flagged]")) flag.closest("tr").classList.add("flagged");
}

function rights(channel) {
  const flagged = channel.bots.filter((b) => b.flagged);
  const text = channel.bots.map((b) => `${b.status}${b.flagged ? " ⚠" : ""}`).join(", ");
  const node = element("span", { class: flagged.length ? "flag" : "", text: text || t("none") });
  if (flagged.length) {
    node.setAttribute("data-flagged", "");
    node.title = flagged.map((b) => b.last_error || t("notAdmin")).join("; ");
  }
  return node;
}

async function contentsView() {
  await listView({
    id: "contents", path: "/v1/contents",
    columns: [
      { label: "code", sort: "code", value: (c) => c.code },
      { label: "kind", value: (c) => t(c.kind) },
      { label: "link", value: (c) => copyable(c.link) },
    ],
  });
}

function copyable(text) {
  const button = element("button", { type: "button", class: "copy", "data-text": "copy", text: t("copy") });
  button.addEventListener("click", async () => {
    await navigator.clipboard.writeText(text);
    button.textContent = t("copied");
  });
  return element("span", {}, element("code", { text }), " ", button);
}

async function peopleView() {
  await listView({
    id: "people", path: "/v1/people",
    columns: [
      { label: "telegramUser", sort: "telegram_user_id", value: (p) => String(p.telegram_user_id) },
      { label: "username", value: (p) => p.username ? "@" + p.username : null },
      { label: "firstSeen", sort: "first_seen_at", value: (p) => when(p.first_seen_at) },
      { label: "lastSeen", sort: "last_seen_at", value: (p) => when(p.last_seen_at) },
    ],
  });
}

async function membershipsView() {
  await listView({
    id: "memberships", path: "/v1/memberships",
    filters: [{ name: "status", label: "status", values: ["active", "grace", "expired"] }],
    columns: [
      { label: "telegramUser", value: (m) => String(m.telegram_user_id) },
      { label: "channel", value: (m) => m.channel_title },
      { label: "status", sort: "status", value: (m) => t(m.status) },
      { label: "expires", sort: "expires_at", value: (m) => when(m.expires_at) },
    ],
    actions: (m) => [historyButton(m)],
  });
}

function historyButton(membership) {
  const button = element("button", { type: "button", "data-action": "history", "data-text": "history", text: t("history") });
  button.addEventListener("click", async () => {
    try {
      const events = await call("GET", `/v1/memberships/${membership.person_id}/${membership.channel_id}/events?limit=50`);
      const list = element("ul", { class: "history" }, ...events.items.map((e) => element("li", {
        text: `${when(e.at)}: ${e.from_status ? t(e.from_status) + " → " : ""}${t(e.to_status)} (${t(e.cause)})`,
      })));
      button.replaceWith(list);
    } catch (error) {
      show(error);
    }
  });
  return button;
}

async function invoicesView() {
  await listView({
    id: "invoices", path: "/v1/invoices",
    filters: [{ name: "status", label: "status", values: ["open", "paid", "expired", "cancelled"] }],
    columns: [
      { label: "reference", value: (i) => i.order_reference },
      { label: "telegramUser", value: (i) => String(i.telegram_user_id) },
      { label: "amount", sort: "amount_minor", value: (i) => money(i.amount_minor / 100, i.currency) },
      { label: "status", sort: "status", value: (i) => t(i.status) },
      { label: "created", sort: "created_at", value: (i) => when(i.created_at) },
    ],
  });
}

async function paymentsView() {
  // Gateway events that need the owner: authentic callbacks that could not be applied.
  const events = await call("GET", "/v1/gateway-events?limit=20");
  const notes = events.items.map((e) => element("li", {
    text: `${when(e.received_at)}: ${e.gateway} ${e.event_type}, ${t(e.outcome)}${e.detail ? " (" + e.detail + ")" : ""}`,
  }));
  await listView({
    id: "payments", path: "/v1/payments",
    before: notes.length ? [element("h2", { "data-text": "needsOwner", text: t("needsOwner") }), element("ul", { id: "gateway-events" }, ...notes)] : [],
    columns: [
      { label: "gateway", sort: "gateway", value: (p) => p.gateway },
      { label: "reference", value: (p) => p.order_reference },
      { label: "amount", sort: "amount_minor", value: (p) => money(p.amount_minor / 100, p.currency) },
      { label: "applied", value: (p) => t(p.applied ? "yes" : "no") + (p.flag ? ` (${p.flag})` : "") },
      { label: "paidAt", sort: "paid_at", value: (p) => when(p.paid_at) },
    ],
  });
}

async function accessEventsView() {
  await listView({
    id: "access-events", path: "/v1/access-events",
    filters: [{ name: "state", label: "state", values: ["pending", "processing", "done", "failed"] }],
    columns: [
      { label: "kind", sort: "kind", value: (e) => t(e.kind) },
      { label: "telegramUser", value: (e) => String(e.telegram_user_id) },
      { label: "channel", value: (e) => e.channel_title },
      { label: "state", sort: "state", value: (e) => t(e.state) },
      { label: "attempts", sort: "attempts", value: (e) => number(e.attempts) },
      { label: "lastError", value: (e) => e.last_error },
    ],
    actions: (e) => e.state === "failed" && may("admin")
      ? [actionButton("retry", () => call("POST", `/v1/access-events/${e.id}/retry`))] : [],
  });
}

const ORDER_STATES = ["requested", "approved", "part_paid", "paid", "rejected", "cancelled", "expired"];

async function ordersView() {
  await listView({
    id: "orders", path: "/v1/ad-orders",
    filters: [{ name: "status", label: "status", values: ORDER_STATES }],
    columns: [
      { label: "order", sort: "id", value: (o) => "#" + number(o.id) },
      { label: "ad", value: (o) => (o.ad.text ?? o.ad.caption ?? t("forwardedPost")).slice(0, 80) },
      { label: "price", sort: "price_micros", value: (o) => usdt(o.price_micros) },
      { label: "progress", sort: "paid_micros", value: (o) => progress(o) },
      { label: "status", sort: "status", value: (o) => t(o.status) },
      { label: "due", value: (o) => when(o.due_at) },
    ],
    actions: (o) => o.status === "requested" && may("admin")
      ? [
        actionButton("approve", () => call("POST", `/v1/ad-orders/${o.id}/approve`, {})),
        actionButton("reject", () => call("POST", `/v1/ad-orders/${o.id}/reject`, {})),
      ] : [],
  });
}

function progress(order) {
  const bar = element("progress", { max: String(order.price_micros), value: String(order.paid_micros) });
  return element("span", { class: "progress" }, bar, " ",
    element("span", { text: `${usdt(order.paid_micros)} / ${usdt(order.price_micros)}` }));
}

async function deadUpdatesView() {
  if (!may("admin")) return forbiddenView();
  await listView({
    id: "dead-updates", path: "/v1/dead-updates",
    columns: [
      { label: "update", value: (u) => String(u.update_id) },
      { label: "kind", value: (u) => u.kind },
      { label: "attempts", sort: "attempt", value: (u) => number(u.attempt) },
      { label: "lastError", value: (u) => u.last_error },
      { label: "received", sort: "received_at", value: (u) => when(u.received_at) },
    ],
    actions: (u) => [actionButton("replay", () => call("POST", `/v1/dead-updates/${u.id}/replay`))],
  });
}

async function teamView() {
  if (!may("owner")) return forbiddenView();
  await listView({
    id: "team", path: "/v1/team",
    columns: [
      { label: "email", sort: "email", value: (m) => m.email },
      { label: "name", value: (m) => m.display_name },
      { label: "role", sort: "role", value: (m) => t(m.role) },
      { label: "status", value: (m) => t(m.disabled ? "disabled" : "enabled") },
    ],
  });
}

async function auditView() {
  if (!may("owner")) return forbiddenView();
  await listView({
    id: "audit", path: "/v1/audit",
    columns: [
      { label: "when", sort: "at", value: (a) => when(a.at) },
      { label: "action", sort: "action", value: (a) => a.action },
      { label: "target", value: (a) => a.target },
    ],
  });
}

// A form of labelled fields posting `submit(values)`; the view is drawn again once it succeeds.
function formOf(id, fields, submitKey, submit) {
  const inputs = {};
  const labels = fields.map(({ name, label, type = "text", options, value = "" }) => {
    let input;
    if (options) {
      input = element("select", { name }, ...options.map((o) => element("option", { value: o, text: t(o) })));
      input.value = value || options[0];
    } else if (type === "textarea") {
      input = element("textarea", { name, rows: "4" });
    } else {
      input = element("input", { name, type, value });
    }
    inputs[name] = input;
    return element("label", {}, element("span", { "data-text": label, text: t(label) }), input);
  });
  const form = element("form", { id }, ...labels,
    element("button", { type: "submit", "data-text": submitKey, text: t(submitKey) }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, v.value.trim()]));
    try {
      const answer = await submit(values);
      show(null);
      await openView(location.pathname + location.search);
      if (answer && answer.note) view.prepend(element("p", { id: `${id}-done`, text: answer.note }));
    } catch (error) {
      show(error);
    }
  });
  return form;
}

function endOfDay(date) {
  return date ? new Date(`${date}T23:59:59Z`).toISOString() : undefined;
}

async function admissionView() {
  const channels = (await call("GET", "/v1/channels?limit=200")).items.filter((c) => c.is_paid);
  const wanted = Number(new URLSearchParams(location.search).get("channel")) || channels[0]?.id;
  const channel = channels.find((c) => c.id === wanted);
  if (!channel) {
    view.replaceChildren(element("p", { class: "empty", "data-text": "noPaidChannel", text: t("noPaidChannel") }));
    return;
  }
  const picker = element("select", { id: "admission-channel" },
    ...channels.map((c) => element("option", { value: String(c.id), text: c.title })));
  picker.value = String(channel.id);
  picker.addEventListener("change", async () => {
    history.pushState(null, "", `/admission?channel=${picker.value}`);
    try { await openView(location.pathname); } catch (error) { show(error); }
  });
  const admin = may("admin");
  const before = [
    element("label", {}, element("span", { "data-text": "channel", text: t("channel") }), picker),
    element("p", { id: "admission-mode", text: `${t("admissionMode")}: ${t(channel.admission)}` }),
  ];
  if (admin) {
    before.push(
      formOf("mode", [{ name: "admission", label: "admissionMode", options: ["single_use_link", "join_request"], value: channel.admission }],
        "save", (v) => call("PATCH", `/v1/channels/${channel.id}`, { admission: v.admission })),
      element("h2", { "data-text": "addToWhitelist", text: t("addToWhitelist") }),
      formOf("whitelist-add", [{ name: "telegram_user_id", label: "telegramUser", type: "number" }, { name: "note", label: "note" }],
        "add", (v) => call("POST", `/v1/channels/${channel.id}/whitelist`, { telegram_user_id: Number(v.telegram_user_id), note: v.note })),
      element("h2", { "data-text": "importMembers", text: t("importMembers") }),
      formOf("import", [
        { name: "ids", label: "idsOnePerLine", type: "textarea" },
        { name: "action", label: "action", options: ["whitelist", "grant"] },
        { name: "until", label: "until", type: "date" },
        { name: "reason", label: "reason", value: "imported" },
      ], "import", async (v) => {
        const body = { ids: v.ids.split(/[\s,;]+/).filter(Boolean), action: v.action, reason: v.reason || "imported" };
        if (v.until) body.until = endOfDay(v.until);
        const done = await call("POST", `/v1/channels/${channel.id}/import`, body);
        return { note: t("imported", { added: number(done.added), accepted: number(done.accepted), rejected: number(done.rejected.length) }) };
      }),
      element("h2", { "data-text": "grantAccess", text: t("grantAccess") }),
      formOf("grant", [
        { name: "telegram_user_id", label: "telegramUser", type: "number" },
        { name: "until", label: "until", type: "date" },
        { name: "reason", label: "reason" },
      ], "grant", (v) => call("POST", "/v1/grants", {
        telegram_user_id: Number(v.telegram_user_id), channel_id: channel.id, until: endOfDay(v.until), reason: v.reason,
      })),
      element("h2", { "data-text": "whitelist", text: t("whitelist") }),
    );
  }
  await listView({
    id: "whitelist", path: `/v1/channels/${channel.id}/whitelist`, before,
    columns: [
      { label: "telegramUser", sort: "telegram_user_id", value: (w) => String(w.telegram_user_id) },
      { label: "note", value: (w) => w.note || null },
      { label: "created", sort: "created_at", value: (w) => when(w.created_at) },
    ],
    actions: admin ? (w) => [actionButton("remove", () =>
      call("DELETE", `/v1/channels/${channel.id}/whitelist/${w.telegram_user_id}`))] : null,
  });
}

async function slotsView() {
  const admin = may("admin");
  const before = [];
  if (admin) {
    const bots = (await call("GET", "/v1/bots?limit=200")).items;
    before.push(element("h2", { "data-text": "addSlot", text: t("addSlot") }),
      formOf("add-slot", [
        { name: "bot_id", label: "bots", options: bots.map((b) => String(b.id)) },
        { name: "kind", label: "kind", options: ["pinned_post", "broadcast", "button"] },
        { name: "title", label: "title" },
        { name: "price", label: "priceUsdt" },
        { name: "accepts_trx", label: "acceptsTrx", options: ["no", "yes"] },
      ], "add", (v) => call("POST", "/v1/ad-slots", {
        bot_id: Number(v.bot_id), kind: v.kind, title: v.title, price: v.price, accepts_trx: v.accepts_trx === "yes",
      })));
  }
  await listView({
    id: "slots", path: "/v1/ad-slots", before,
    columns: [
      { label: "title", sort: "title", value: (s) => s.title },
      { label: "kind", value: (s) => t(s.kind) },
      { label: "price", sort: "price_micros", value: (s) => usdt(s.price_micros) },
      { label: "coins", value: (s) => [s.accepts_usdt && "USDT", s.accepts_trx && "TRX"].filter(Boolean).join(", ") },
      { label: "status", value: (s) => t(s.active ? "enabled" : "disabled") },
    ],
    actions: admin ? (s) => [actionButton(s.active ? "deactivate" : "activate", () =>
      call("PATCH", `/v1/ad-slots/${s.id}`, { active: !s.active }))] : null,
  });
}

function forbiddenView() {
  view.replaceChildren(element("p", { class: "empty", "data-text": "ownersOnly", text: t("ownersOnly") }));
}

async function botsView() {
  const after = [];
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
    after.push(element("h2", { "data-text": "addBot", text: t("addBot") }), form);
  }
  await listView({
    id: "bots", path: "/v1/bots", after,
    columns: [
      { label: "username", sort: "username", value: (b) => "@" + b.username },
      { label: "mode", value: (b) => b.mode },
      { label: "status", sort: "status", value: (b) => t(b.status) },
      { label: "lastError", value: (b) => b.last_error },
    ],
  });
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

// Links within the page open their view without reloading it.
document.addEventListener("click", async (event) => {
  const link = event.target.closest("a[href^='/']");
  if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
  event.preventDefault();
  history.pushState(null, "", link.getAttribute("href"));
  try { await openView(location.pathname); } catch (error) { show(error); }
});

window.addEventListener("popstate", async () => {
  try { await openView(location.pathname); } catch (error) { show(error); }
});

document.getElementById("language").addEventListener("change", async (event) => {
  setLanguage(event.target.value, true);
  // Numbers, dates and words in the view are drawn for a language: draw it again.
  if (session.me) {
    try { await openView(location.pathname); } catch (error) { show(error); }
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
