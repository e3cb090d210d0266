"""The broadcast composer as an owner writes in it: formatting from a toolbar, the message drawn
as Telegram will show it (its formatting and its button) and its length counted as Telegram
counts it, in UTF-16 units once the tags and entities are read, marked past the limit; in both
languages."""

from __future__ import annotations

from playwright.sync_api import Page, expect

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
