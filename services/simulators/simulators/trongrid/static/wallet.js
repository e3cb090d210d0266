// @ts-check
// The simulated TRON wallet: sends a transfer on the simulated chain and shows its hash, which
// is what an advertiser gives the bot. Errors are shown at the field they are about.

const ADDRESS = /^T[1-9A-HJ-NP-Za-km-z]{33}$/;
const AMOUNT = /^(\d{1,9})(?:[.,](\d{1,6}))?$/;
const KINDS = /** @type {Record<string, string>} */ ({
  usdt: "USDT", trx: "TRX", fake_token: "fake USDT", failed: "USDT (failed)",
});

/** @param {string} id */
function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node;
}

/** @param {string} id */
function input(id) {
  return /** @type {HTMLInputElement} */ (byId(id));
}

/**
 * An amount in TRON's six decimals as base units (sun, or USDT's millionths), or null.
 * @param {string} text
 */
export function baseUnits(text) {
  const match = AMOUNT.exec(text.trim());
  if (!match) return null;
  const units = BigInt(match[1]) * 1_000_000n + BigInt((match[2] ?? "").padEnd(6, "0"));
  return units > 0n ? units : null;
}

/** @param {bigint | number} units */
function major(units) {
  const value = BigInt(units);
  const fraction = (value % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  return fraction ? `${value / 1_000_000n}.${fraction}` : `${value / 1_000_000n}`;
}

/** @param {string} field @param {string} text */
function fieldProblem(field, text) {
  byId(`${field}-problem`).textContent = text;
  input(field).setAttribute("aria-invalid", String(Boolean(text)));
}

/** @returns {Record<string, string> | null} the transfer asked for, or null with the problems shown */
function asked() {
  const to = input("to").value.trim();
  const from = input("from").value.trim();
  const units = baseUnits(input("amount").value);
  const problems = {
    to: ADDRESS.test(to) ? "" : "A TRON address: T and 33 more letters and digits.",
    from: ADDRESS.test(from) ? "" : "A TRON address: T and 33 more letters and digits.",
    amount: units ? "" : "A number above zero with at most six decimals, such as 10 or 2.5.",
  };
  for (const [field, text] of Object.entries(problems)) fieldProblem(field, text);
  const first = Object.entries(problems).find(([, text]) => text);
  if (first) {
    input(first[0]).focus();
    return null;
  }
  const kind = /** @type {HTMLSelectElement} */ (byId("kind")).value;
  return { kind, to, from, amount: String(units) };
}

async function history() {
  const response = await fetch("/_sim/transactions");
  if (!response.ok) return;
  /** @type {{ transactions: Array<{ hash: string, kind: string, to: string, amount: number }>, payer: string }} */
  const answer = await response.json();
  if (!input("from").value) input("from").value = answer.payer;
  byId("history").replaceChildren(...answer.transactions.map((tx) => {
    const item = document.createElement("li");
    const hash = document.createElement("code");
    hash.textContent = tx.hash;
    hash.dir = "ltr";
    item.append(`${major(tx.amount)} ${KINDS[tx.kind] ?? tx.kind} to `, tx.to, ": ", hash);
    return item;
  }));
}

async function send(/** @type {SubmitEvent} */ event) {
  event.preventDefault();
  const transfer = asked();
  if (!transfer) return;
  const problem = byId("problem");
  problem.hidden = true;
  const response = await fetch("/_sim/transactions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(transfer),
  }).catch(() => null);
  const answer = response ? await response.json().catch(() => ({})) : {};
  if (!response || !response.ok || !answer.tx_hash) {
    problem.textContent = `The simulated chain refused it: ${answer.error ?? "no answer"}`;
    problem.hidden = false;
    return;
  }
  byId("sent-what").textContent =
    `${major(BigInt(transfer.amount))} ${KINDS[transfer.kind]} to ${transfer.to}. Give the bot this transaction hash:`;
  byId("hash").textContent = answer.tx_hash;
  byId("copied").textContent = "";
  byId("sent").hidden = false;
  await history();
}

async function copy() {
  const hash = byId("hash").textContent ?? "";
  try {
    await navigator.clipboard.writeText(hash);
    byId("copied").textContent = "Copied.";
  } catch {
    // No clipboard (an insecure origin): select it for the person to copy.
    getSelection()?.selectAllChildren(byId("hash"));
    byId("copied").textContent = "Selected: press Ctrl+C to copy.";
  }
}

function start() {
  const query = new URLSearchParams(location.search);
  for (const field of ["to", "amount", "from"]) input(field).value = query.get(field) ?? "";
  const kind = query.get("kind");
  if (kind && kind in KINDS) /** @type {HTMLSelectElement} */ (byId("kind")).value = kind;
  byId("send").addEventListener("submit", (event) => void send(/** @type {SubmitEvent} */ (event)));
  byId("copy").addEventListener("click", () => void copy());
  void history();
}

start();
