// @ts-check
// Numbers, money and dates for a language: pure, so node's test runner checks them.

/** @param {string} lang @param {number | string} value */
export function formatNumber(lang, value) {
  return new Intl.NumberFormat(lang).format(/** @type {number} */ (value));
}

// Coins that are no ISO currency: written after the amount, up to their 6 decimals.
const COINS = new Set(["USDT", "TRX"]);

/**
 * An amount given as decimal text in major units ("12.50", "500", "1.250"), shown with the
 * digits the text has: the API writes each currency with its own exponent, so 500 yen stay 500
 * and 1.250 dinars keep three decimals. Never through a guess at the exponent.
 * @param {string} lang @param {string} amount @param {string} currency
 */
export function formatMoney(lang, amount, currency) {
  const code = String(currency).toUpperCase();
  const text = String(amount);
  const digits = text.includes(".") ? text.length - text.indexOf(".") - 1 : 0;
  // Intl formats a decimal string exactly (no float on the way).
  const exact = /** @type {number} */ (/** @type {unknown} */ (text));
  if (!COINS.has(code) && /^[A-Z]{3}$/.test(code)) {
    try {
      return new Intl.NumberFormat(lang, {
        style: "currency", currency: code, minimumFractionDigits: digits, maximumFractionDigits: digits,
      }).format(exact);
    } catch { /* a code Intl does not take */ }
  }
  return `${new Intl.NumberFormat(lang, { maximumFractionDigits: 6 }).format(exact)} ${code}`;
}

/**
 * A moment with date and time in a time zone (UTC when the zone is unknown). Persian uses the
 * Persian calendar, as Intl does for "fa".
 * @param {string} lang @param {string | Date} value @param {string} timeZone
 */
export function formatDateTime(lang, value, timeZone) {
  /** @type {Intl.DateTimeFormatOptions} */
  const options = { dateStyle: "medium", timeStyle: "short", timeZone };
  try {
    return new Intl.DateTimeFormat(lang, options).format(new Date(value));
  } catch {
    return new Intl.DateTimeFormat(lang, { ...options, timeZone: "UTC" }).format(new Date(value));
  }
}

/**
 * A calendar day (YYYY-MM-DD) as a short date in the language's calendar: "Nov 3", "۱۲ آبان".
 * @param {string} lang @param {string} day
 */
export function formatDay(lang, day) {
  return new Intl.DateTimeFormat(lang, { month: "short", day: "numeric", timeZone: "UTC" })
    .format(new Date(`${day}T12:00:00Z`));
}

/**
 * The last `count` days in a time zone, oldest first, as YYYY-MM-DD.
 * @param {string} timeZone @param {Date} now @param {number} [count]
 */
export function lastDays(timeZone, now, count = 30) {
  let today;
  try {
    today = new Intl.DateTimeFormat("en-CA", { timeZone }).format(now);
  } catch {
    today = now.toISOString().slice(0, 10);
  }
  const [y, m, d] = today.split("-").map(Number);
  return Array.from({ length: count }, (_, n) =>
    new Date(Date.UTC(y, m - 1, d - (count - 1) + n)).toISOString().slice(0, 10));
}

/**
 * Round steps for a chart's y axis from zero to at least `top`: 1, 2 or 5 times a power of ten.
 * @param {number} top @param {number} [most] at most this many steps
 * @returns {number[]}
 */
export function axisTicks(top, most = 4) {
  if (!(top > 0)) return [0, 1];
  const rough = top / most;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((f) => f * power).find((s) => s >= rough) ?? 10 * power;
  const ticks = [];
  for (let value = 0; value < top + step; value += step) {
    ticks.push(Number(value.toPrecision(12)));
    if (value >= top) break;
  }
  return ticks;
}

/**
 * Whole base units (USDT micros, TRX sun) as decimal text: ("1500000", 6) -> "1.5". By the
 * digits, so an amount past 2^53 stays exact.
 * @param {string} units @param {number} places
 */
export function fromBaseUnits(units, places) {
  const digits = String(units).replace(/^0+(?=\d)/, "").padStart(places + 1, "0");
  const whole = digits.slice(0, digits.length - places);
  const fraction = digits.slice(digits.length - places).replace(/0+$/, "");
  return fraction ? `${whole}.${fraction}` : whole;
}
