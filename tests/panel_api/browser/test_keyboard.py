"""The panel with the keyboard alone, as an owner who does not use a mouse: signed in, past the
navigation by the skip link, to a page by its link, a form's dialog opened and shut, and in
Persian on a phone through the menu. (Every page's controls show their focus: test_pages.)"""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.panel_api.browser.conftest import PASSWORD


def tab_to(page: Page, selector: str, most: int = 80) -> None:
    """Tab pressed until the control `selector` names has the focus (failing after `most`)."""
    for _ in range(most):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector):
            return
    raise AssertionError(f"{selector} not reached in {most} presses of Tab")


def test_keyboard__signed_in_around_the_pages_and_through_a_dialog_without_a_mouse(
    page: Page, panel: str
) -> None:
    page.goto(panel)
    tab_to(page, "input[name=email]")
    page.keyboard.type("owner@example.com")
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    expect(page.locator("#who")).to_be_visible()

    # The first Tab from the top shows the skip link; it takes the focus past the navigation.
    page.reload()
    expect(page.locator("#who")).to_be_visible()
    page.keyboard.press("Tab")
    skip = page.locator("a.skip")
    expect(skip).to_be_focused()
    box = skip.bounding_box()
    assert box is not None and box["y"] >= 0 and box["x"] >= 0, box
    page.keyboard.press("Enter")
    expect(page.locator("#view")).to_be_focused()

    # A page by its link: its heading takes the focus.
    tab_to(page, "#pages a[data-view=plans]")
    page.keyboard.press("Enter")
    expect(page.locator("main h1")).to_have_text("Plans")
    expect(page.locator("main h1")).to_be_focused()
    assert page.url.endswith("/plans")
    # Its form: opened with Enter, the focus on the first field; Escape shuts it and gives the
    # focus back.
    tab_to(page, "[data-opens=add-plan]")
    page.keyboard.press("Enter")
    dialog = page.locator("dialog[open]")
    expect(dialog).to_be_visible()
    assert page.evaluate("document.activeElement.closest('dialog') !== null")
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(page.locator("[data-opens=add-plan]")).to_be_focused()

    # Persian, on a phone: the language by its box's arrow keys, the menu by its button.
    page.set_viewport_size({"width": 390, "height": 844})
    tab_to(page, "#language")
    drawn = page.locator("#view h1").element_handle()
    page.keyboard.press("ArrowDown")
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    drawn.wait_for_element_state("hidden")
    tab_to(page, "#menu")
    page.keyboard.press("Enter")
    expect(page.locator("#menu")).to_have_attribute("aria-expanded", "true")
    tab_to(page, "#pages a[data-view=memberships]")
    page.keyboard.press("Enter")
    expect(page.locator("main h1")).to_have_text("عضویت‌ها")
    expect(page.locator("main h1")).to_be_focused()
