// The chat window's reading of Telegram HTML and t.me links, under node's test runner.
import assert from "node:assert/strict";
import { test } from "node:test";

import { linkTarget, parseHtml, unescape } from "../../services/simulators/simulators/telegram/static/markup.js";

test("Telegram's four named entities and numeric ones are read back", () => {
  assert.equal(unescape("a &lt;b&gt; &amp; &quot;c&quot; &#1587;&#x644;"), 'a <b> & "c" سل');
});

test("supported tags nest; text between them stays text, never markup", () => {
  assert.deepEqual(parseHtml("<b>Pay</b> for <i>Demo &amp; <u>co</u></i>"), [
    { tag: "b", children: ["Pay"] },
    " for ",
    { tag: "i", children: ["Demo & ", { tag: "u", children: ["co"] }] },
  ]);
  assert.deepEqual(parseHtml("&lt;script&gt;alert(1)&lt;/script&gt;"), ["<script>alert(1)</script>"]);
});

test("a link keeps its address; an unsupported tag is left as the text it is", () => {
  assert.deepEqual(parseHtml('<a href="https://t.me/x?start=a&amp;b">go</a><img src=x>'), [
    { tag: "a", href: "https://t.me/x?start=a&b", children: ["go"] },
    "<img src=x>",
  ]);
});

test("a stray closing tag is dropped and an unclosed one ends with the text", () => {
  assert.deepEqual(parseHtml("a</b><code>b"), ["a", { tag: "code", children: ["b"] }]);
});

test("t.me links: a bot's start link, an invite link, a public chat, anything else", () => {
  assert.deepEqual(linkTarget("https://t.me/sim1_bot?start=pay_3"), { kind: "start", name: "sim1_bot", code: "pay_3" });
  assert.deepEqual(linkTarget("https://t.me/+sim123x4"), { kind: "invite", url: "https://t.me/+sim123x4" });
  assert.deepEqual(linkTarget("https://t.me/$AbC-12_x"), { kind: "invoice", url: "https://t.me/$AbC-12_x" });
  assert.deepEqual(linkTarget("https://t.me/demo_news"), { kind: "chat", name: "demo_news" });
  assert.deepEqual(linkTarget("http://127.0.0.1:8083/checkout/stripe/gh_x"), { kind: "web", url: "http://127.0.0.1:8083/checkout/stripe/gh_x" });
  assert.deepEqual(linkTarget("not a url"), { kind: "web", url: "not a url" });
});
