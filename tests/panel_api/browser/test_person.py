"""A person's own page, reached from a row: who they are, the bots they wrote to, their
memberships and their payments, theirs only, checked against the ledger; in Persian on a
phone too."""

from __future__ import annotations

import psycopg
from playwright.sync_api import Page, expect

from tests.panel_api.browser.conftest import ARTIFACTS, accessibility_problems, persian, sign_in
from tests.panel_api.history import seed_history

# One of the demo month's paying members, with two payments (tests/panel_api/history.py).
USER = 7000001


def test_person__from_a_row_to_their_page_with_their_memberships_and_payments(
    page: Page, panel: str, database_url: str
) -> None:
    assert seed_history(database_url) is True
    with psycopg.connect(database_url) as conn:
        held, paid = conn.execute(
            "SELECT (SELECT count(*) FROM memberships m WHERE m.person_id = p.id),"
            " (SELECT count(*) FROM payments pay WHERE pay.person_id = p.id)"
            " FROM people p WHERE p.telegram_user_id = %s",
            (USER,),
        ).fetchone() or (0, 0)
    assert held >= 1 and paid >= 1, (held, paid)
    sign_in(page, panel)
    page.goto(f"{panel}/memberships?q={USER}")
    page.locator("#memberships a.to-person").first.click()
    expect(page.locator("main h1")).to_have_text("Person")
    assert page.url.endswith(f"/people/{USER}")
    expect(page.locator("#person-facts")).to_contain_text(str(USER))
    expect(page.locator("#person-memberships tbody tr")).to_have_count(held)
    expect(page.locator("#person-payments tbody tr")).to_have_count(paid)
    expect(page.locator("#person-memberships .badge").first).to_be_visible()
    assert accessibility_problems(page) == []
    page.screenshot(path=str(ARTIFACTS / "person-en.png"), full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    drawn = page.locator("#view h1").element_handle()
    persian(page)
    drawn.wait_for_element_state("hidden")
    expect(page.locator("main h1")).to_have_text("شخص")
    expect(page.locator("#person-payments tbody tr")).to_have_count(paid)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert accessibility_problems(page) == []
    page.screenshot(path=str(ARTIFACTS / "person-fa-390.png"), full_page=True)
