// The page's words: both languages have every key, and placeholders agree.
import assert from "node:assert/strict";
import { test } from "node:test";

import { WORDS } from "../../../services/panel-api/panel_api/static/i18n.js";

test("English and Persian have the same keys", () => {
  const en = Object.keys(WORDS.en).sort();
  const fa = Object.keys(WORDS.fa).sort();
  assert.deepEqual(en.filter((k) => !fa.includes(k)), [], "missing in Persian");
  assert.deepEqual(fa.filter((k) => !en.includes(k)), [], "missing in English");
});

test("each text names the same placeholders in both languages", () => {
  const names = (/** @type {string} */ text) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
  for (const key of Object.keys(WORDS.en)) {
    assert.deepEqual(names(WORDS.fa[key] ?? ""), names(WORDS.en[key]), key);
  }
});

test("every field code of docs/errors.md has words", async () => {
  const { readFile } = await import("node:fs/promises");
  const docs = await readFile(new URL("../../../docs/errors.md", import.meta.url), "utf8");
  const section = docs.split("## Which field, and what is wrong with it")[1];
  const codes = [...section.matchAll(/^\| `([a-z-]+)` \|/gm)].map((m) => m[1]);
  assert.ok(codes.length > 10);
  for (const code of codes) assert.ok(`e.${code}` in WORDS.en, code);
});

test("Persian words write their numbers in Persian digits", () => {
  const latin = Object.entries(WORDS.fa).filter(([, text]) => /[0-9]/.test(text));
  assert.deepEqual(latin, []);
});
