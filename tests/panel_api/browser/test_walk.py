"""A new owner's first hour, through the page alone: from an empty workspace to a gated content,
then a visitor in the simulated Telegram meets the gate and gets the content once they join."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from botedge.words import FSI, PDI
from panel_api.app import create_app
from shared.testing import serve_in_thread
from tests.botedge.conftest import new_token
from tests.botedge.e2e.conftest import Edge, edge  # noqa: F401 - the fixture
from tests.botedge.e2e.test_gate import GATE_OPENING, VISITOR, Setup, press, sent_to
from tests.conftest import panel_settings, wait_until
from tests.panel_api.browser.conftest import ARTIFACTS, PASSWORD, open_form

NEWS = -1001000000901
BOT = 5550901


@pytest.mark.slow(15)
def test_walk__an_empty_workspace_to_a_gated_content_a_visitor_meets(
    page: Page,
    edge: Edge,  # noqa: F811
    database_url: str,
) -> None:
    token = new_token(BOT)
    edge.sim_post("/_sim/bots", {"token": token})
    edge.sim_post(
        "/_sim/chats",
        {
            "id": NEWS,
            "type": "channel",
            "title": "News",
            "username": "news_one",
            "admin_bots": [BOT],
        },
    )
    api = edge.start_api()
    codes: list[str] = []
    app = create_app(panel_settings(database_url, BOTEDGE_URL=api.url), announce=codes.append)
    with serve_in_thread(app) as url:
        # The first start: the owner made with the code panel-api printed.
        page.goto(url)
        page.click("#first-start")
        wait_until(lambda: bool(codes), 10, "the setup code")
        page.fill("#setup input[name=code]", codes[-1])
        page.fill("#setup input[name=email]", "new@example.com")
        page.fill("#setup input[name=password]", PASSWORD)
        page.click("#setup button[type=submit]")
        expect(page.locator("#who")).to_have_text("Signed in as new@example.com (owner)")

        # Nothing to add a channel or content with until there is a bot.
        page.click("#pages a[data-view=channels]")
        expect(page.locator("main")).to_contain_text("Add a bot first, on the Bots page.")
        page.click("#pages a[data-view=bots]")
        open_form(page, "add-bot")
        page.fill("#add-bot input[name=token]", token)
        page.select_option("#add-bot select[name=mode]", "polling")
        page.click("#add-bot button[type=submit]")
        expect(page.locator("#add-bot-done")).to_have_text(f"@sim{BOT}_bot added.")

        page.click("#pages a[data-view=channels]")
        open_form(page, "add-channel")
        page.fill("#add-channel input[name=chat]", "https://t.me/news_one")
        page.click("#add-channel button[type=submit]")
        expect(page.locator("#add-channel-done")).to_contain_text("Found “News”: admin")
        expect(page.locator("#channels tbody tr")).to_have_count(1)

        page.click("#pages a[data-view=contents]")
        open_form(page, "add-content")
        page.fill("#add-content input[name=code]", "promo")
        page.fill("#add-content textarea[name=body]", "The secret")
        page.select_option("#add-content select[name=gate]", "ownGate")
        page.locator("#add-content fieldset label", has_text="News").locator("input").check()
        page.click("#add-content button[type=submit]")
        link = f"https://t.me/sim{BOT}_bot?start=promo"
        expect(page.locator("#add-content-done")).to_have_text(f"Content added. Its link: {link}")
        expect(page.locator("#contents tbody tr", has_text="promo")).to_contain_text("News")
        page.screenshot(path=str(ARTIFACTS / "walk-contents.png"), full_page=True)

    # The visitor follows the link: the gate first, the content once they have joined.
    [(bot_id, content_id)] = edge.query("SELECT bot_id, id FROM contents WHERE code = 'promo'")
    edge.start_worker()
    edge.sim_post("/_sim/messages", {"bot_id": BOT, "user_id": VISITOR, "text": "/start promo"})
    edge.wait_until(lambda: bool(sent_to(edge, VISITOR)), 30, "the gate message")
    [gate] = sent_to(edge, VISITOR)
    assert gate["text"].startswith(GATE_OPENING) and f"<b>{FSI}News{PDI}</b>" in gate["text"]
    edge.sim_post("/_sim/join", {"chat_id": NEWS, "user_id": VISITOR})
    press(edge, Setup(bot_id, BOT, content_id), gate["message_id"])
    edge.wait_until(lambda: len(sent_to(edge, VISITOR)) == 2, 30, "the content")
    assert sent_to(edge, VISITOR)[1]["text"] == "The secret"
