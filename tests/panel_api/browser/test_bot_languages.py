"""The bot's words as people read them in the simulated Telegram's chat window: Persian quoted
inside an English sentence and an English title inside a Persian one keep their places, because
the bot isolates them (U+2068 ... U+2069); screenshots in each language."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page, expect

from botedge.words import FSI, PDI
from tests.botedge.e2e.conftest import Edge, edge  # noqa: F401 - the fixture
from tests.botedge.e2e.paying import BOT, Store, open_store
from tests.conftest import ServiceProcess
from tests.panel_api.browser.conftest import ARTIFACTS

# Where each of `parts` is drawn in the newest message from the bot containing `text`: the
# left and right edges and the top of its first occurrence.
PLACES = """([text, parts]) => {
  const all = [...document.querySelectorAll("#messages li.theirs")];
  const li = all.reverse().find((item) => item.textContent.includes(text));
  const walker = document.createTreeWalker(li, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  const found = {};
  for (const part of parts) {
    for (const node of nodes) {
      const at = node.data.indexOf(part);
      if (at < 0) continue;
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + part.length);
      const box = range.getBoundingClientRect();
      found[part] = [box.left, box.right, Math.round(box.top)];
      break;
    }
  }
  return found;
}"""


def places(page: Page, text: str, *parts: str) -> dict[str, list[float]]:
    found = page.evaluate(PLACES, [text, list(parts)])
    assert sorted(found) == sorted(parts), found
    return dict(found)


def open_chat(page: Page, store: Store, person: int, language: str) -> None:
    page.goto(f"{store.edge.sim.url}/?person={person}&bot={BOT}")
    page.select_option("#language", language)


def test_bot_languages__persian_inside_english_and_english_inside_persian_keep_their_places(
    page: Page,
    edge: Edge,  # noqa: F811
    start_service: Callable[..., ServiceProcess],
    database_url: str,
) -> None:
    store = open_store(edge, start_service, database_url)
    edge.start_worker()
    english = edge.sim_post("/_sim/people", {"first_name": "Emma"})["id"]
    persian = edge.sim_post("/_sim/people", {"first_name": "رضا"})["id"]

    # English: a Persian message quoted back. The quote marks and the full stop stay after
    # it, on the right, and the sentence goes on to its right.
    open_chat(page, store, english, "en")
    page.fill("#text", "سلام، خوبی؟")
    page.click("#composer button[type=submit]")
    said = page.locator("#messages li.theirs", has_text="I did not understand").last
    expect(said).to_be_visible()
    assert f'"{FSI}سلام، خوبی؟{PDI}"' in said.inner_text()
    at = places(page, "I did not understand", "understand", "سلام", "Send /start")
    assert at["understand"][2] == at["سلام"][2] == at["Send /start"][2], at
    assert at["understand"][1] < at["سلام"][0] < at["سلام"][1] < at["Send /start"][0], at
    page.screenshot(path=str(ARTIFACTS / "bot-en-quotes-persian.png"), full_page=True)

    # Persian: the English title first in the sentence, so rightmost; the price after it, to
    # its left, in Persian digits.
    open_chat(page, store, persian, "fa")
    page.fill("#text", f"/start pay_{store.channel}")
    page.click("#composer button[type=submit]")
    offer = page.locator("#messages li.theirs", has_text="روش پرداخت").last
    expect(offer).to_be_visible()
    at = places(page, "روش پرداخت", "Paid", "۱۲٫۵۰", "برای")
    assert at["Paid"][2] == at["۱۲٫۵۰"][2] == at["برای"][2], at
    assert at["برای"][1] < at["Paid"][0], at
    assert at["۱۲٫۵۰"][1] < at["Paid"][0], at
    page.screenshot(path=str(ARTIFACTS / "bot-fa-english-title.png"), full_page=True)
    # On a phone: the same order, the buttons within the width.
    page.set_viewport_size({"width": 390, "height": 844})
    expect(offer).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(ARTIFACTS / "bot-fa-english-title-390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})

    # Russian and Arabic, for the eye.
    for language in ("ru", "ar"):
        someone = edge.sim_post("/_sim/people", {"first_name": f"Visitor {language}"})["id"]
        open_chat(page, store, someone, language)
        page.fill("#text", "/start")
        page.click("#composer button[type=submit]")
        expect(page.locator("#messages li.theirs")).to_have_count(1)
        page.screenshot(path=str(ARTIFACTS / f"bot-{language}-welcome.png"), full_page=True)
