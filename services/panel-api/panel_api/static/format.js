// @ts-check
// Numbers, money and dates for a language: pure, so node's test runner checks them.

/** Persian and Arabic-Indic digits as ASCII ones, so "۱۴۰۵" reads as 1405. @param {string} text */
export function latinDigits(text) {
  return text.replace(/[۰-۹]/g, (d) => String(d.charCodeAt(0) - 0x06f0))
    .replace(/[٠-٩]/g, (d) => String(d.charCodeAt(0) - 0x0660));
}

/**
 * A number as typed in either script, as the API reads it: Persian and Arabic-Indic digits as
 * ASCII, the Arabic decimal separator (٫) as a point, its thousands separator (٬) dropped; so
 * "۹٫۹۹" is sent as "9.99". @param {string} text
 */
export function asciiNumber(text) {
  return latinDigits(text).replace(/\u066b/g, ".").replace(/\u066c/g, "");
}

/**
 * A number or amount as a box shows it in the language: Persian digits and the Arabic decimal
 * separator in Persian ("45.50" as "۴۵٫۵۰"); `asciiNumber` reads it back. @param {string} lang
 * @param {string} text
 */
export function localDigits(lang, text) {
  if (lang !== "fa") return text;
  return text.replace(/[0-9]/g, (d) => String.fromCharCode(0x06f0 + Number(d))).replace(/\./g, "\u066b");
}

/** Items as a list in the language: "USDT, TRX", "USDT، TRX". @param {string} lang @param {string[]} items */
export function formatList(lang, items) {
  return new Intl.ListFormat(lang, { type: "unit", style: "short" }).format(items);
}

/** A share as a percentage in the language: 0.67 -> "67%", "۶۷٪". @param {string} lang @param {number} ratio */
export function formatPercent(lang, ratio) {
  return new Intl.NumberFormat(lang, { style: "percent", maximumFractionDigits: 1 }).format(ratio);
}

/** @param {string} lang @param {number | string} value */
export function formatNumber(lang, value) {
  return new Intl.NumberFormat(lang).format(/** @type {number} */ (value));
}

// Coins that are no ISO currency: written after the amount, up to their 6 decimals.
export const COINS = new Set(["USDT", "TRX"]);

/**
 * An amount given as decimal text in major units ("12.50", "500", "1.250"), shown with the
 * digits the text has: the API writes each currency with its own exponent, so 500 yen stay 500
 * and 1.250 dinars keep three decimals. Never through a guess at the exponent.
 * @param {string} lang @param {string} amount @param {string} currency
 */
export function formatMoney(lang, amount, currency) {
  const code = String(currency).toUpperCase();
  const text = String(amount);
  // Telegram Stars: whole stars, written with the star Telegram shows.
  if (code === "XTR") return `${formatNumber(lang, text)} ⭐`;
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

/** How far a time zone's clocks are ahead of UTC at a moment, in milliseconds.
 * @param {number} ms @param {string} timeZone */
function offsetAt(ms, timeZone) {
  const parts = Object.fromEntries(new Intl.DateTimeFormat("en-US", {
    timeZone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric",
  }).formatToParts(new Date(ms)).map((p) => [p.type, Number(p.value)]));
  return Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second) - Math.floor(ms / 1000) * 1000;
}

/**
 * A day and a time on the clocks of a time zone (UTC when the zone is unknown) as the moment
 * it names, in ISO form; a time skipped by a daylight-saving change moves on by the change.
 * @param {string} day YYYY-MM-DD @param {string} time HH:MM @param {string} timeZone
 */
export function fromZoned(day, time, timeZone) {
  const [y, m, d] = day.split("-").map(Number);
  const [hours, minutes] = time.split(":").map(Number);
  const wall = Date.UTC(y, m - 1, d, hours, minutes);
  const DAY_MS = 86_400_000;
  let moment = wall;
  try {
    // The zone's offset a day either side; a candidate holds when its own offset is the one
    // it was made with. Both hold for a time repeated by a change (the first is taken), none
    // for one skipped (the offset before the change carries it past the gap).
    const before = wall - offsetAt(wall - DAY_MS, timeZone);
    const after = wall - offsetAt(wall + DAY_MS, timeZone);
    const holds = [before, after].filter((c) => wall - offsetAt(c, timeZone) === c);
    moment = holds.length ? Math.min(...holds) : before;
  } catch {
    moment = wall;
  }
  return new Date(moment).toISOString();
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

/**
 * A Gregorian day (YYYY-MM-DD) as its Persian year, month and day, as Intl reckons them.
 * @param {string} iso @returns {[number, number, number]}
 */
export function toPersian(iso) {
  const parts = new Intl.DateTimeFormat("en-u-ca-persian-nu-latn", {
    year: "numeric", month: "numeric", day: "numeric", timeZone: "UTC",
  }).formatToParts(new Date(`${iso}T12:00:00Z`));
  /** @param {string} type */
  const part = (type) => Number(parts.find((p) => p.type === type)?.value);
  return [part("year"), part("month"), part("day")];
}

/**
 * A Persian year, month and day as its Gregorian day (YYYY-MM-DD), or null when there is no
 * such day (30 Esfand in a common year). The Persian year starts in March of Gregorian year
 * + 621; the day is found from that start by Intl's own reckoning, so both directions agree.
 * @param {number} year @param {number} month @param {number} day
 */
export function fromPersian(year, month, day) {
  if (!(month >= 1 && month <= 12 && day >= 1 && day <= 31)) return null;
  // 1 Farvardin falls on 19, 20, 21 or 22 March.
  let start = Date.UTC(year + 621, 2, 19);
  while (toPersian(isoDay(start))[0] !== year) start += DAY;
  const offset = month <= 6 ? (month - 1) * 31 : 186 + (month - 7) * 30;
  const found = isoDay(start + (offset + day - 1) * DAY);
  const [y, m, d] = toPersian(found);
  return y === year && m === month && d === day ? found : null;
}

const DAY = 86_400_000;

/** @param {number} time */
function isoDay(time) {
  return new Date(time).toISOString().slice(0, 10);
}

/**
 * A decimal amount as text rounded to `places` (half away from zero), by its digits: no float
 * on the way. ("40.404041", 2) -> "40.40".
 * @param {string} amount @param {number} places
 */
export function roundedTo(amount, places) {
  const negative = amount.startsWith("-");
  const [whole, fraction = ""] = amount.replace(/^-/, "").split(".");
  if (fraction.length <= places) return amount;
  let units = BigInt(whole + fraction.slice(0, places));
  if (Number(fraction[places]) >= 5) units += 1n;
  const digits = units.toString().padStart(places + 1, "0");
  const cut = digits.length - places;
  const text = places ? `${digits.slice(0, cut)}.${digits.slice(cut)}` : digits;
  return negative && units ? `-${text}` : text;
}
