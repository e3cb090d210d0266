"""Lists first: a list page opens on its list, and one "Add" opens the form in a dialog over
it, by keyboard as by pointer, refusals said inside it, in both languages, from 390 px."""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack

import psycopg
from playwright.sync_api import Page, expect

from billing.app import create_app as billing_app
from billing.settings import load as load_billing_settings
from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import free_port, serve_in_thread
from tests.conftest import TEST_BCRYPT_ROUNDS, Serve, panel_settings, serve_simtrongrid, service_env
from tests.panel_api.browser.conftest import (
    ARTIFACTS,
    PASSWORD,
    accessibility_problems,
    open_form,
    persian,
    sign_in,
)

ADD = "[data-opens=new-invoice]"
DIALOG = "dialog[data-dialog=new-invoice]"
FIELDS_INSIDE = """() => {
  const box = document.querySelector("dialog[open]").getBoundingClientRect();
  return [...document.querySelectorAll("dialog[open] :is(input, select, button)")]
    .filter((n) => n.getBoundingClientRect().left < box.left
      || n.getBoundingClientRect().right > box.right)
    .map((n) => n.name || n.textContent);
}"""


def test_lists_first__the_list_then_add_by_keyboard_refused_in_the_dialog_escape_and_billing_down(
    page: Page, database_url: str, serve: Serve
) -> None:
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "WITH c AS (INSERT INTO channels (telegram_chat_id, title, is_paid)"
            " VALUES (-1001000000811, 'Signals', true) RETURNING id)"
            " INSERT INTO plans (channel_id, name, price_minor, currency, period_days,"
            " grace_days, is_default) SELECT id, 'Month', 900, 'USD', 30, 3, true FROM c"
        )
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    chain = serve_simtrongrid(serve)
    billing_port = free_port()

    def billing() -> AbstractContextManager[str]:
        settings = load_billing_settings(service_env(database_url, TRONGRID_URL=chain.url))
        return serve_in_thread(billing_app(settings), port=billing_port)

    settings = panel_settings(database_url, BILLING_URL=f"http://127.0.0.1:{billing_port}")
    with ExitStack() as up, serve_in_thread(create_app(settings)) as url:
        up.enter_context(billing())
        page.set_viewport_size({"width": 390, "height": 844})
        sign_in(page, url)
        drawn = page.locator("#view h1").element_handle()
        persian(page)
        # The view drawn again in Persian (the heading before it gone).
        drawn.wait_for_element_state("hidden")
        page.goto(f"{url}/invoices")
        # The list is the page: the form's fields are not on it, one button offers it, above
        # the list.
        add = page.locator(ADD)
        expect(add).to_have_text("صورت‌حساب تازه")
        expect(page.locator("#new-invoice input[name=telegram_user_id]")).to_be_hidden()
        add_box, table_box = add.bounding_box(), page.locator("#invoices").bounding_box()
        assert add_box and table_box and add_box["y"] < table_box["y"]

        # By keyboard: Enter on the button opens it with the first field focused; a refusal is
        # said at its field in Persian, inside the dialog.
        add.focus()
        page.keyboard.press("Enter")
        box = page.locator("#new-invoice input[name=telegram_user_id]")
        expect(box).to_be_focused()
        page.keyboard.type("۱۲ab")
        page.keyboard.press("Enter")
        expect(page.locator("#new-invoice [data-problem=telegram_user_id]")).to_have_text(
            "یک عدد وارد کنید."
        )
        expect(box).to_be_focused()
        # Escape shuts it, and the focus is back on the button.
        page.keyboard.press("Escape")
        expect(page.locator(f"{DIALOG}[open]")).to_have_count(0)
        expect(add).to_be_focused()

        # Made: the dialog shut, the notice under the page's heading (not in the shut dialog),
        # the row in the list.
        open_form(page, "new-invoice")
        box.fill("۴۲۴۲")
        page.locator("#new-invoice button[type=submit]").click()
        done = page.locator("#new-invoice-done")
        expect(done).to_contain_text("صورت‌حساب")
        expect(page.locator(f"{DIALOG}[open]")).to_have_count(0)
        assert done.evaluate("(n) => n.closest('dialog') === null")
        expect(page.locator("#invoices tbody tr", has_text="۴۲۴۲")).to_have_count(1)

        # A refusal about no one field (billing gone) is said inside the dialog, where it is
        # seen, not in the page's message line behind it.
        open_form(page, "new-invoice")
        box.fill("4343")
        up.close()
        page.locator("#new-invoice button[type=submit]").click()
        refused = page.locator(f"{DIALOG} #new-invoice-refused")
        expect(refused).to_have_text(
            "سرویسی که لازم است پاسخ نمی‌دهد. یک دقیقهٔ دیگر دوباره تلاش کنید."
        )
        expect(page.locator("#message")).to_be_hidden()
        # Inside 390 px, nothing to scroll sideways, nothing axe finds serious.
        dialog = page.locator(DIALOG).bounding_box()
        assert dialog and dialog["x"] >= 0 and dialog["x"] + dialog["width"] <= 390
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        # Every field within the dialog, a long plan name too (in right to left it would spill
        # past the dialog's left edge).
        assert page.evaluate(FIELDS_INSIDE) == []
        assert accessibility_problems(page) == []
        page.screenshot(path=str(ARTIFACTS / "add-dialog-fa-390.png"))

        # Billing back: the same press goes through, and the refusal is gone.
        up.enter_context(billing())
        page.locator("#new-invoice button[type=submit]").click()
        expect(page.locator("#new-invoice-done")).to_contain_text("صورت‌حساب")
        expect(page.locator("#invoices tbody tr", has_text="۴۳۴۳")).to_have_count(1)

        page.set_viewport_size({"width": 1280, "height": 900})
        drawn = page.locator("#view h1").element_handle()
        page.select_option("#language", "en")
        drawn.wait_for_element_state("hidden")
        expect(page.locator(ADD)).to_have_text("New invoice")
        open_form(page, "new-invoice")
        assert accessibility_problems(page) == []
        page.screenshot(path=str(ARTIFACTS / "add-dialog-en.png"))
