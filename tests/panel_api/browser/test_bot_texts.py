"""The owner rewords the bot on the "Bot texts" page, as a new owner would: a text that cannot
stand is refused at its box in the page's language, the preview draws Telegram's formatting,
a saved text is what the next visitor reads (no restart), Reset brings the shipped one back,
and the bot's default language decides for a visitor whose language it does not speak."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Locator, Page, expect

from botedge.pay import CHOOSE_GATEWAY
from botedge.routing import WELCOME
from botedge.words import Words
from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from tests.botedge.e2e.conftest import Edge, edge  # noqa: F401 - the fixture
from tests.botedge.e2e.paying import Store, open_store
from tests.conftest import TEST_BCRYPT_ROUNDS, ServiceProcess, panel_settings
from tests.panel_api.browser.conftest import (
    ARTIFACTS,
    PASSWORD,
    accessibility_problems,
    persian,
    sign_in,
)

OURS = "<b>شیوهٔ پرداخت</b> را برگزینید ⬇️"


def card(page: Page, key: str) -> Locator:
    return page.locator(f"article.bot-text[data-key='{key}']")


def save(page: Page, key: str, text: str) -> Locator:
    """The text typed into its box (opened) and saved; the box's problem line."""
    if not card(page, key).locator("details[open]").count():
        card(page, key).locator("summary").click()
    card(page, key).locator("textarea").fill(text)
    card(page, key).locator("button[type=submit]").click()
    return card(page, key).locator(".field-problem")


def offered(store: Store, user: int, language: str) -> str:
    """The text of the offer a visitor gets for /start pay_<channel>."""
    before = len(store.sent(user))
    store.say(f"/start pay_{store.channel}", user, language)
    store.edge.wait_until(lambda: len(store.sent(user)) > before, 30, "the offer")
    return str(store.sent(user)[-1]["text"])


def test_bot_texts__refused_at_the_box_saved_for_the_next_visitor_then_reset(
    page: Page,
    edge: Edge,  # noqa: F811
    start_service: Callable[..., ServiceProcess],
    database_url: str,
) -> None:
    store = open_store(edge, start_service, database_url)
    api = edge.start_api()
    edge.start_worker()
    shipped_fa = Words().speech("fa")(CHOOSE_GATEWAY)
    assert shipped_fa in offered(store, 8101, "fa")
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, BOTEDGE_URL=api.url, BILLING_URL=store.billing.url)
    with serve_in_thread(create_app(settings)) as url:
        sign_in(page, url)
        page.click("#pages a[href='/bot-texts']")
        page.select_option("#text-language", "fa")
        expect(card(page, "pay.choose_gateway").locator(".bubble")).to_have_text(shipped_fa)
        assert accessibility_problems(page) == []

        # The gate's text without the button it names: refused at its box, in English, then
        # in Persian once the page is.
        problem = save(page, "gate.join_first", "نخست در {channels} عضو شوید.")
        expect(problem).to_have_text(
            "A placeholder of this text is missing: keep each one shown above."
        )
        drawn = card(page, "gate.join_first").element_handle()
        persian(page)
        # The view drawn again in Persian: the card before it is gone.
        drawn.wait_for_element_state("hidden")
        problem = save(page, "gate.join_first", "نخست در {channels} عضو شوید.")
        expect(problem).to_contain_text("جای‌نگهدار")
        gate_box = card(page, "gate.join_first").locator("textarea")
        expect(gate_box).to_have_attribute("aria-invalid", "true")

        # A tag Telegram does not read, refused; then ours, its preview in bold.
        problem = save(page, "pay.choose_gateway", "<blink>روش</blink>")
        expect(problem).to_contain_text("تلگرام")
        box = card(page, "pay.choose_gateway").locator("textarea")
        box.fill(OURS)
        expect(card(page, "pay.choose_gateway").locator(".bubble b")).to_have_text("شیوهٔ پرداخت")
        page.screenshot(path=str(ARTIFACTS / "bot-texts-fa.png"), full_page=True)
        assert accessibility_problems(page) == []
        card(page, "pay.choose_gateway").locator("button[type=submit]").click()
        expect(card(page, "pay.choose_gateway").locator("[data-written]")).to_be_visible()
        shown = card(page, "pay.choose_gateway").locator(".shipped bdi")
        expect(shown).to_have_text(shipped_fa)

        # The next Persian visitor reads it, no restart; an English one the shipped words.
        assert OURS in offered(store, 8102, "fa")
        assert "Choose how to pay:" in offered(store, 8103, "en")

        # On a phone: the cards within the width.
        page.set_viewport_size({"width": 390, "height": 844})
        expect(card(page, "pay.choose_gateway")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.screenshot(path=str(ARTIFACTS / "bot-texts-fa-390.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 800})

        # Reset: the shipped words again, for the page and the next visitor.
        card(page, "pay.choose_gateway").locator("[data-action=textReset]").click()
        card(page, "pay.choose_gateway").locator("[data-confirm=textReset]").click()
        expect(card(page, "pay.choose_gateway").locator("[data-written]")).to_have_count(0)
        assert shipped_fa in offered(store, 8104, "fa")

        # The default language: Russian for a visitor in German, which the bot does not speak.
        page.select_option("#default-language select", "ru")
        page.click("#default-language button[type=submit]")
        expect(page.locator("#default-language-done")).to_be_visible()
        store.say("/start", 8105, "de")
        edge.wait_until(lambda: bool(store.sent(8105)), 30, "the welcome")
        assert store.sent(8105)[-1]["text"].startswith(Words().speech("ru")(WELCOME))
    page.screenshot(path=str(ARTIFACTS / "bot-texts-reset.png"), full_page=True)
