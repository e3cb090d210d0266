"""The broadcast composer as an owner writes in it: formatting from a toolbar, the message drawn
as Telegram will show it (its formatting and its button) and its length counted as Telegram
counts it, in UTF-16 units once the tags and entities are read, marked past the limit; in both
languages."""

from __future__ import annotations

import psycopg
from playwright.sync_api import Page, expect

from tests.conftest import HTTP
from tests.panel_api.browser.conftest import (
    ARTIFACTS,
    Stack,
    accessibility_problems,
    open_form,
    persian,
    sign_in,
)


def test_broadcast_editor__preview_as_telegram_draws_it_and_length_as_telegram_counts_it(
    page: Page, stack: Stack
) -> None:
    sign_in(page, stack.url)
    page.click("#pages a[data-view=broadcasts]")
    open_form(page, "add-broadcast")
    box = page.locator("#add-broadcast textarea[name=text]")
    # 2 + 1 + 2 (the emoji, outside the BMP) + 1 + 1 (&amp;) + 5 = 12 units; the tags count
    # nothing.
    box.fill("<b>Hi</b> 😀 &amp; <i>more</i>")
    preview = page.locator("#broadcast-preview")
    expect(preview.locator("b")).to_have_text("Hi")
    expect(preview.locator("i")).to_have_text("more")
    expect(preview).to_have_text("Hi 😀 & more")
    expect(page.locator("#broadcast-length")).to_have_text(
        "12 of 4,096 characters, as Telegram counts them"
    )
    # Formatted from the toolbar: the chosen word made bold, still chosen, then made a link.
    box.fill("Hello world")
    box.evaluate("(box) => box.setSelectionRange(6, 11)")
    page.click("#add-broadcast [data-format=bold]")
    expect(box).to_have_value("Hello <b>world</b>")
    expect(preview.locator("b")).to_have_text("world")
    page.click("#add-broadcast [data-format=link]")
    expect(box).to_have_value('Hello <b><a href="https://">world</a></b>')
    expect(preview.locator("b a")).to_have_text("world")
    page.fill("#add-broadcast input[name=button_text]", "Join")
    expect(page.locator("#broadcast-preview-button")).to_have_text("Join")
    # Past the limit: said, and marked.
    box.fill("x" * 4097)
    expect(page.locator("#broadcast-length")).to_have_attribute("data-over", "")
    drawn = box.element_handle()
    persian(page)
    # The view drawn again in Persian (the box before it gone): the counter in Persian digits.
    drawn.wait_for_element_state("hidden")
    open_form(page, "add-broadcast")
    page.locator("#add-broadcast textarea[name=text]").fill("<b>سلام</b> به همه")
    expect(page.locator("#broadcast-length")).to_contain_text("۱۱ از ۴٬۰۹۶")
    expect(page.locator("#broadcast-preview b")).to_have_text("سلام")
    assert accessibility_problems(page) == []
    page.screenshot(path=str(ARTIFACTS / "broadcast-editor-fa.png"), full_page=True)


def test_broadcast_editor__what_telegram_stores_is_the_editors_model_text_and_entities(
    page: Page, stack: Stack
) -> None:
    """Composed with the toolbar (bold, a link inside it, italic, code) around an emoji and an
    ampersand, then sent to oneself: the text and entities the simulated Telegram stores for the
    person equal those the editor draws its preview from."""
    with psycopg.connect(stack.database_url) as conn:
        [(bot,)] = conn.execute("SELECT id FROM bots").fetchall()
        conn.execute(
            "WITH p AS (INSERT INTO people (telegram_user_id, username)"
            " VALUES (7410001, 'owner_me') RETURNING id)"
            " INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at, started_at)"
            " SELECT %s, id, now(), now(), now() FROM p",
            (bot,),
        )
    sign_in(page, stack.url)
    page.goto(f"{stack.url}/broadcasts")
    open_form(page, "add-broadcast")
    form = page.locator("#add-broadcast")
    box = form.locator("textarea[name=text]")
    box.fill("Sale today 😀 &amp; more at the shop now")
    for word, tool in (("Sale", "bold"), ("Sale", "link"), ("more", "italic"), ("shop", "code")):
        box.evaluate(
            "(box, word) => { const at = box.value.indexOf(word); box.focus();"
            " box.setSelectionRange(at, at + word.length); }",
            word,
        )
        page.click(f"#add-broadcast [data-format={tool}]")
        if tool == "link":
            # The caret waits in the address.
            page.keyboard.type("example.com/sale?a=1&amp;b=2")
    written = box.input_value()
    assert '<b><a href="https://example.com/sale?a=1&amp;b=2">Sale</a></b>' in written
    model = page.evaluate(
        "async (text) => (await import('/assets/telegram.js')).entitiesOf(text)", written
    )
    assert {e["type"] for e in model["entities"]} == {"bold", "text_link", "italic", "code"}
    assert {e.get("url") for e in model["entities"]} == {None, "https://example.com/sale?a=1&b=2"}
    form.locator("input[name=to]").fill("@owner_me")
    form.locator("button[type=submit]").click()
    expect(page.locator("#broadcast-tested")).to_be_visible()
    [stored] = HTTP.get(f"{stack.sim}/_sim/sent", params={"chat_id": 7410001}).json()
    assert stored["text"] == written
    assert {"text": stored["plain"], "entities": stored["entities"]} == model
    expect(page.locator("#broadcast-preview")).to_have_text(model["text"])
