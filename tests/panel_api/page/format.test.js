// The page's pure formatting, under node's own test runner (`make test` runs it).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  asciiNumber, axisTicks, formatDay, formatList, formatMoney, formatPercent, localDigits, formatNumber, fromBaseUnits, fromPersian, fromZoned, lastDays, roundedTo, toPersian,
} from "../../../services/panel-api/panel_api/static/format.js";

test("money keeps the digits the API wrote: yen whole, dinars to three places", () => {
  assert.equal(formatMoney("en", "500", "JPY"), "¥500");
  assert.equal(formatMoney("en", "1.250", "KWD"), "KWD\u00a01.250");
  assert.equal(formatMoney("en", "12.50", "USD"), "$12.50");
  // Telegram Stars: whole stars with Telegram's star.
  assert.equal(formatMoney("en", "2500", "XTR"), "2,500 ⭐");
  assert.equal(formatMoney("fa", "250", "XTR"), "۲۵۰ ⭐");
});

test("money in USDT and TRX: the coin after the amount, up to six decimals, never a float", () => {
  assert.equal(formatMoney("en", "12.5", "USDT"), "12.5 USDT");
  assert.equal(formatMoney("en", "0.000001", "TRX"), "0.000001 TRX");
  // 2^53 + 1 as text: a float would lose the last digit.
  assert.equal(formatMoney("en", "9007199254740993", "USDT"), "9,007,199,254,740,993 USDT");
});

test("Persian: Persian digits and separators", () => {
  assert.equal(formatMoney("fa", "12.5", "USDT"), "۱۲٫۵ USDT");
  assert.equal(formatNumber("fa", 1234), "۱٬۲۳۴");
  assert.match(formatMoney("fa", "500", "JPY"), /۵۰۰/);
});

test("a day in the Persian calendar in Persian, the Gregorian in English", () => {
  assert.equal(formatDay("en", "2026-03-21"), "Mar 21");
  // 1 Farvardin 1405: the Persian new year.
  assert.equal(formatDay("fa", "2026-03-21"), "۱ فروردین");
});

test("the last 30 days end today in the workspace's zone", () => {
  // 22:30 UTC on 1 December is already 2 December in Tehran (UTC+3:30).
  const now = new Date("2026-12-01T22:30:00Z");
  const tehran = lastDays("Asia/Tehran", now);
  assert.equal(tehran.length, 30);
  assert.equal(tehran[29], "2026-12-02");
  assert.equal(tehran[0], "2026-11-03");
  assert.equal(lastDays("UTC", now)[29], "2026-12-01");
  assert.equal(lastDays("Not/AZone", now)[29], "2026-12-01");
});

test("the y axis has round steps up to at least the highest value", () => {
  assert.deepEqual(axisTicks(12), [0, 5, 10, 15]);
  assert.deepEqual(axisTicks(120), [0, 50, 100, 150]);
  assert.deepEqual(axisTicks(0.3), [0, 0.1, 0.2, 0.3]);
  assert.deepEqual(axisTicks(0), [0, 1]);
  for (const top of [1, 7, 99, 1234, 98765]) {
    const ticks = axisTicks(top);
    assert.ok(ticks[ticks.length - 1] >= top, `${top}: ${ticks}`);
    assert.ok(ticks.length <= 6, `${top}: ${ticks}`);
  }
});

test("fromBaseUnits: micros and sun as decimal text, exact past 2^53", () => {
  assert.equal(fromBaseUnits("1500000", 6), "1.5");
  assert.equal(fromBaseUnits("12500000", 6), "12.5");
  assert.equal(fromBaseUnits("1", 6), "0.000001");
  assert.equal(fromBaseUnits("0", 6), "0");
  assert.equal(fromBaseUnits("90071992547409931234567", 6), "90071992547409931.234567");
});

test("amounts rounded by their digits, not as floats", () => {
  assert.equal(roundedTo("40.404041", 2), "40.40");
  assert.equal(roundedTo("40.405", 2), "40.41");
  assert.equal(roundedTo("0.995", 2), "1.00");
  assert.equal(roundedTo("-1.005", 2), "-1.01");
  assert.equal(roundedTo("12.5", 2), "12.5");
  assert.equal(roundedTo("9007199254740993.999", 2), "9007199254740994.00");
});

test("Persian dates to Gregorian and back, every day of ten years", () => {
  assert.deepEqual(toPersian("2026-03-21"), [1405, 1, 1]);
  assert.equal(fromPersian(1405, 9, 11), "2026-12-02");
  // 1403 is a leap year: 30 Esfand exists; 1404 is not.
  assert.equal(fromPersian(1403, 12, 30), "2025-03-20");
  assert.equal(fromPersian(1404, 12, 30), null);
  assert.equal(fromPersian(1405, 7, 31), null);
  for (let time = Date.UTC(2020, 0, 1); time < Date.UTC(2030, 0, 1); time += 86_400_000) {
    const iso = new Date(time).toISOString().slice(0, 10);
    assert.equal(fromPersian(...toPersian(iso)), iso);
  }
});

test("a number typed in Persian or Arabic-Indic digits goes out in ASCII, with either decimal separator", () => {
  assert.equal(asciiNumber("۹٫۹۹"), "9.99");
  assert.equal(asciiNumber("٩٫٩٩"), "9.99");
  assert.equal(asciiNumber("۱٬۲۵۰٫۵"), "1250.5");
  assert.equal(asciiNumber("12.50"), "12.50");
  // What is not a number stays as typed, for the API to refuse at its field.
  assert.equal(asciiNumber("12,50"), "12,50");
});

test("a list joins as its language does", () => {
  assert.equal(formatList("en", ["USDT", "TRX"]), "USDT, TRX");
  // The Persian comma, with a right-to-left mark after it.
  assert.equal(formatList("fa", ["USDT", "TRX"]), "USDT،‏ TRX");
  assert.equal(formatList("en", []), "");
});

test("a number the form starts with shows in the page's digits and reads back as typed", () => {
  assert.equal(localDigits("fa", "45.50"), "۴۵٫۵۰");
  assert.equal(localDigits("en", "45.50"), "45.50");
  assert.equal(asciiNumber(localDigits("fa", "1250.5")), "1250.5");
});

test("a share is written as the language writes a percentage, its sign where it puts it", () => {
  assert.equal(formatPercent("en", 0.67), "67%");
  // Persian digits and the Arabic percent sign after them, not "%67".
  assert.equal(formatPercent("fa", 0.67), "۶۷٪");
  assert.equal(formatPercent("fa", 0.125), "۱۲٫۵٪");
  assert.equal(formatPercent("en", 0), "0%");
});

test("a day and time on a zone's clocks is the moment it names, across daylight saving", () => {
  assert.equal(fromZoned("2026-12-10", "18:30", "Asia/Tehran"), "2026-12-10T15:00:00.000Z");
  assert.equal(fromZoned("2026-07-01", "09:00", "America/New_York"), "2026-07-01T13:00:00.000Z");
  assert.equal(fromZoned("2026-12-01", "09:00", "America/New_York"), "2026-12-01T14:00:00.000Z");
  // 02:30 on the spring-forward day does not exist in New York: on by the hour skipped.
  assert.equal(fromZoned("2026-03-08", "02:30", "America/New_York"), "2026-03-08T07:30:00.000Z");
  // 01:30 on the fall-back day happens twice: the first.
  assert.equal(fromZoned("2026-11-01", "01:30", "America/New_York"), "2026-11-01T05:30:00.000Z");
  assert.equal(fromZoned("2026-12-10", "00:05", "UTC"), "2026-12-10T00:05:00.000Z");
  assert.equal(fromZoned("2026-12-10", "00:05", "Not/AZone"), "2026-12-10T00:05:00.000Z");
});
