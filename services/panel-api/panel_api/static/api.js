// @ts-check
// The panel API's client: the access token in memory only, renewed by the refresh cookie before
// it runs out, after a reload and when a call finds it expired. Every refusal is an ApiProblem.

const CSRF = { "X-Requested-With": "gatehouse" };

/** @typedef {{ field: string, code: string }} FieldError */
/** @typedef {{ id: number, email: string, role: string }} Me */

export const session = {
  /** @type {string | null} */ token: null,
  /** @type {ReturnType<typeof setTimeout> | undefined} */ timer: undefined,
  /** @type {Me | null} */ me: null,
  zone: "UTC",
  /** Called once when a session that was signed in is found ended (another tab signed out). */
  /** @type {() => void} */ onEnded: () => {},
};

export class ApiProblem extends Error {
  /**
   * @param {number} status
   * @param {Record<string, any>} body the problem+json answer
   * @param {Headers} [headers]
   */
  constructor(status, body, headers) {
    super(body.detail || body.title || `HTTP ${status}`);
    this.status = status;
    this.slug = String(body.type || "").replace("/problems/", "");
    this.title = body.title || `HTTP ${status}`;
    this.detail = body.detail || "";
    /** @type {FieldError[]} */
    this.errors = Array.isArray(body.errors) ? body.errors : [];
    this.retryAfter = headers?.get("Retry-After") ?? null;
    this.requestId = headers?.get("X-Request-Id") ?? "";
  }
}

/** A refusal already said in the page's words (what the server's answer meant here). */
export class Refusal extends Error {}

/** The session ended while a view was being drawn: the sign-in form is already showing. */
export class SessionEnded extends Error {}

/**
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @param {{ retry?: boolean, headers?: Record<string, string> }} [options]
 * @returns {Promise<any>}
 */
export async function call(method, path, body, { retry = true, headers = {} } = {}) {
  return parsed(await send(method, path, body, { retry, headers }));
}

/**
 * A file the API writes (a CSV export), saved by the browser under the name the API gives.
 * @param {string} path
 */
export async function download(path) {
  const response = await send("GET", path);
  const name = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") ?? "")?.[1] ?? "export.csv";
  const address = URL.createObjectURL(await response.blob());
  const link = Object.assign(document.createElement("a"), { href: address, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(address), 60_000);
}

/**
 * The answer to one request, the token renewed once when it had run out; a refusal thrown as
 * an ApiProblem.
 * @param {string} method @param {string} path @param {unknown} [body]
 * @param {{ retry?: boolean, headers?: Record<string, string> }} [options]
 * @returns {Promise<Response>}
 */
async function send(method, path, body, { retry = true, headers = {} } = {}) {
  /** @type {RequestInit & { headers: Record<string, string> }} */
  const request = { method, headers: { ...headers }, credentials: "same-origin" };
  if (session.token) request.headers.Authorization = `Bearer ${session.token}`;
  if (body !== undefined) {
    request.headers["Content-Type"] = "application/json";
    request.body = JSON.stringify(body);
  }
  const response = await fetch(path, request);
  if (response.status === 401 && retry && session.token) {
    if (await renew()) return send(method, path, body, { retry: false, headers });
    end();
    throw new SessionEnded();
  }
  if (!response.ok) throw new ApiProblem(response.status, (await parsed(response)) || {}, response.headers);
  return response;
}

/** @param {Response} response @returns {Promise<any>} */
async function parsed(response) {
  const text = await response.text();
  try { return text ? JSON.parse(text) : null; } catch { return { detail: text.slice(0, 200) }; }
}

/** @param {{ access_token: string, expires_in: number }} tokens */
export function keep(tokens) {
  session.token = tokens.access_token;
  clearTimeout(session.timer);
  // A minute early, so a request never leaves with a token about to die.
  const wait = Math.max(5, tokens.expires_in - 60) * 1000;
  session.timer = setTimeout(renew, wait);
}

/** A new access token from the refresh cookie; false when there is no session to renew. */
export async function renew() {
  try {
    keep(await call("POST", "/v1/auth/refresh", undefined, { retry: false, headers: CSRF }));
    return true;
  } catch {
    session.token = null;
    return false;
  }
}

/** @param {string} email @param {string} password */
export async function signIn(email, password) {
  keep(await call("POST", "/v1/auth/login", { email, password }, { retry: false }));
}

export async function signOut() {
  try {
    await call("POST", "/v1/auth/logout", undefined, { retry: false, headers: CSRF });
  } catch { /* gone already */ }
  forget();
}

function forget() {
  clearTimeout(session.timer);
  session.token = null;
  session.me = null;
}

function end() {
  const was = session.me !== null;
  forget();
  if (was) session.onEnded();
}

const RANK = /** @type {Record<string, number>} */ ({ viewer: 0, editor: 1, admin: 2, owner: 3 });

/** Whether the signed-in member's role is at least `role`. @param {string} role */
export function may(role) {
  return session.me !== null && RANK[session.me.role] >= RANK[role];
}
