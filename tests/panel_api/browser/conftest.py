"""The panel page in headless Chromium (Debian's, driven by Playwright): one browser per module,
a context of its own per test, and the signed-in panel most tests start from."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot
from tests.conftest import (
    HTTP,
    ROOT,
    TEST_BCRYPT_ROUNDS,
    Serve,
    panel_settings,
    serve_botedge_api,
    serve_simtelegram,
)
from tests.panel_api.e2e.conftest import start_billing

# Debian's headless shell where installed (.ci/run installs it): the same Blink without the
# browser's own layers, about a third less time a page; the full browser otherwise.
CHROMIUM = (
    shutil.which("chromium-headless-shell")
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
)
ARTIFACTS = ROOT / "tests" / "artifacts"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
PASSWORD = "correct horse battery"

SPONSOR = -1001000000701
FA_DIGITS = str.maketrans("۰۱۲۳۴۵۶۷۸۹", "0123456789")
BOT = 5550701

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402


@pytest.fixture
def panel(database_url: str) -> Iterator[str]:
    insert_bot(database_url)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    with serve_in_thread(create_app(panel_settings(database_url))) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Chromium for the module (starting one costs about two CPU seconds); each test gets
    a context of its own, with its own storage and cookies."""
    if CHROMIUM is None:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "Chromium is missing: .ci/run installs it"
                " (apt-get install chromium chromium-headless-shell)"
            )
        pytest.skip("no Chromium: `apt-get install chromium` to run the browser tests")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    # What the page's Content Security Policy refused: a style or script it would drop.
    refused: list[str] = []
    page.on(
        "console",
        lambda message: (
            refused.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    yield page
    context.close()
    assert refused == [], refused


def sign_in(page: Page, url: str, password: str = PASSWORD, *, wait: bool = True) -> None:
    """Signed in, and with `wait` on the dashboard already: a navigation while the sign-in is
    still on its way would drop the refresh cookie its answer sets, and the next page would ask
    to sign in again."""
    page.goto(url)
    page.fill("input[name=email]", "owner@example.com")
    page.fill("input[name=password]", password)
    page.click("#sign-in button[type=submit]")
    if wait:
        expect(page.locator("#who")).to_be_visible(timeout=15_000)


def accessibility_problems(page: Page) -> list[str]:
    """What axe-core finds critical or serious on the page as it stands, one line each."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    found = page.evaluate(
        "async () => (await axe.run(document, { resultTypes: ['violations'] })).violations"
        ".filter((v) => v.impact === 'critical' || v.impact === 'serious')"
        ".map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)"
    )
    return list(found)


# Each control a person can reach with Tab, focused in turn as the keyboard would (the page
# has had a key press, so Chromium draws `:focus-visible`): one that takes no focus or draws no
# ring is named. A positive tabindex (an order of its own) is named too.
_FOCUS = """() => {
  const name = (el) => `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}`
    + `${el.getAttribute('name') ? '[name=' + el.getAttribute('name') + ']' : ''}`
    + ` "${(el.textContent || el.getAttribute('aria-label') || '').trim().slice(0, 30)}"`;
  const reachable = [...document.querySelectorAll(
      'a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]')]
    .filter((el) => !el.disabled && el.tabIndex >= 0 && el.getClientRects().length
      && getComputedStyle(el).visibility !== 'hidden'
      && !el.closest('[inert], dialog:not([open])'));
  const found = [...document.querySelectorAll('[tabindex]')]
    .filter((el) => el.tabIndex > 0).map((el) => `${name(el)} has its own tab order`);
  const kept = document.activeElement;
  for (const el of reachable) {
    el.focus({ preventScroll: true });
    if (document.activeElement !== el) { found.push(`${name(el)} takes no focus`); continue; }
    const s = getComputedStyle(el);
    const ring = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0)
      || s.boxShadow !== 'none';
    if (!ring) found.push(`${name(el)} shows no focus`);
  }
  if (kept instanceof HTMLElement) kept.focus({ preventScroll: true });
  return found;
}"""


def focus_problems(page: Page) -> list[str]:
    """Controls on the page as it stands that the keyboard reaches but cannot see focused."""
    page.keyboard.press("Shift")
    return list(page.evaluate(_FOCUS))


@dataclass
class Stack:
    url: str
    database_url: str
    sim: str
    billing: str = ""


@pytest.fixture
def stack(database_url: str, serve: Serve) -> Iterator[Stack]:
    """The panel with botedge's API, the simulated Telegram and billing behind it; a bot the
    simulated Telegram knows, an admin in one channel there."""
    sim = serve_simtelegram(serve)
    botedge = serve_botedge_api(serve, database_url, TELEGRAM_API_BASE=sim.url)
    billing = start_billing(serve, database_url, BOTEDGE_URL=botedge.url)
    _, token, _ = insert_bot(database_url, BOT)
    HTTP.post(f"{sim.url}/_sim/bots", json={"token": token}).raise_for_status()
    HTTP.post(
        f"{sim.url}/_sim/chats",
        json={
            "id": SPONSOR,
            "type": "channel",
            "title": "Sponsor",
            "username": "sponsor_a",
            "admin_bots": [BOT],
        },
    ).raise_for_status()
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, BOTEDGE_URL=botedge.url, BILLING_URL=billing)
    with serve_in_thread(create_app(settings)) as url:
        yield Stack(url, database_url, sim.url, billing)


def persian(page: Page) -> None:
    page.select_option("#language", "fa")
    expect(page.locator("html")).to_have_attribute("dir", "rtl")


def open_form(page: Page, form: str) -> None:
    """A list page's "Add" pressed: its form open in the dialog over the list."""
    page.click(f"[data-opens={form}]")
    expect(page.locator(f"dialog[open] #{form}")).to_be_visible()
