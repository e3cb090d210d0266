"""Members extended and removed in bulk from the Memberships page, as an owner does it: three
rows ticked, days refused at their box when out of range, asked first, each person's outcome
said, and their paid time moved once; then one removed from the channel on a phone; in Persian
too."""

from __future__ import annotations

import datetime as dt

import psycopg
from playwright.sync_api import Page, expect

from tests.billing.e2e import gateways
from tests.conftest import HTTP
from tests.panel_api.browser.conftest import (
    ARTIFACTS,
    PASSWORD,
    Stack,
    accessibility_problems,
    persian,
    sign_in,
)
from tests.panel_api.e2e.conftest import sign_in as api_sign_in

PEOPLE = (8201, 8202, 8203, 8204)


def expiries(stack: Stack) -> dict[int, dt.datetime]:
    with psycopg.connect(stack.database_url) as conn:
        rows = conn.execute(
            "SELECT p.telegram_user_id, m.expires_at FROM memberships m"
            " JOIN people p ON p.id = m.person_id WHERE p.telegram_user_id = ANY(%s)",
            (list(PEOPLE),),
        ).fetchall()
    return {int(user): at for user, at in rows}


def test_members_bulk__three_chosen_extended_once_each_said_in_the_pages_language(
    page: Page, stack: Stack
) -> None:
    channel = gateways.add_paid_channel(stack.database_url)
    token = api_sign_in(stack.url, "owner@example.com", PASSWORD)
    until = (dt.datetime.now(dt.UTC) + dt.timedelta(days=10)).isoformat()
    for user in PEOPLE:
        body = {"telegram_user_id": user, "channel_id": channel, "until": until, "reason": "x"}
        made = HTTP.post(
            f"{stack.url}/v1/grants", json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert made.status_code == 200, made.text
    before = expiries(stack)
    sign_in(page, stack.url)
    page.click("#pages a[data-view=memberships]")
    rows = page.locator("#memberships tbody tr")
    expect(rows).to_have_count(4)

    # Nothing chosen: said, nothing sent. Days out of range: refused at their box.
    page.click("#extend")
    expect(page.locator("#message")).to_contain_text("Choose the members")
    for user in PEOPLE[:3]:
        rows.filter(has_text=str(user)).locator("input[data-select]").check()
    page.fill("#extend-days", "0")
    page.click("#extend")
    expect(page.locator("#extend-days-problem")).to_have_text("Outside what is allowed.")
    expect(page.locator("#extend-days")).to_have_attribute("aria-invalid", "true")

    # Persian from here: five days, in Persian digits; asked first, then each one's outcome.
    persian(page)
    for user in PEOPLE[:3]:
        rows.filter(has_text="".join("۰۱۲۳۴۵۶۷۸۹"[int(d)] for d in str(user))).locator(
            "input[data-select]"
        ).check()
    page.fill("#extend-days", "۵")
    expires = rows.filter(has_text="۸۲۰۱").locator("td[data-label='پایان']")
    shown = expires.inner_text()
    page.click("#extend")
    expect(page.locator(".bulk .asking")).to_contain_text("۳ عضو ۵ روز تمدید شوند؟")
    page.click("[data-confirm=extend]")
    outcomes = page.locator("#bulk-results li")
    expect(outcomes).to_have_count(3)
    expect(page.locator("#bulk-results li[data-outcome=extended]")).to_have_count(3)
    expect(outcomes.first).to_contain_text("تمدید شد")
    expect(outcomes.first).to_contain_text("۸۲۰۱")
    expect(page.locator("#extend-days")).to_have_value("۳۰")
    # The list drawn again with the new dates.
    expect(expires).not_to_have_text(shown)
    after = expiries(stack)
    assert {u: after[u] - before[u] for u in PEOPLE} == {
        **{u: dt.timedelta(days=5) for u in PEOPLE[:3]},
        PEOPLE[3]: dt.timedelta(0),
    }
    assert accessibility_problems(page) == []
    page.screenshot(path=str(ARTIFACTS / "members-extended-fa.png"), full_page=True)
    # On a phone: the bar and the rows within the width.
    page.set_viewport_size({"width": 390, "height": 844})
    expect(page.locator("#extend")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(ARTIFACTS / "members-extended-fa-390.png"), full_page=True)

    # The fourth removed from the channel, from the phone: asked first, kept when told to keep.
    fourth = rows.filter(has_text="۸۲۰۴")
    fourth.locator("input[data-select]").check()
    page.click("#remove")
    asking = page.locator(".bulk .asking")
    expect(asking).to_contain_text("۱ عضو همین حالا از کانالشان بیرون شوند؟")
    asking.get_by_role("button", name="نه، بماند").click()
    expect(page.locator("#remove")).to_be_focused()
    assert expiries(stack)[PEOPLE[3]] == before[PEOPLE[3]]
    page.click("#remove")
    page.click("[data-confirm=remove]")
    removed = page.locator("#bulk-results li[data-action=removed]")
    expect(removed).to_have_count(1)
    expect(removed).to_have_attribute("data-outcome", "removed")
    expect(removed).to_contain_text("از کانال بیرون شد")
    expect(fourth.locator("td[data-label='وضعیت']")).to_have_text("منقضی")
    with psycopg.connect(stack.database_url) as conn:
        revoked = conn.execute(
            "SELECT p.telegram_user_id FROM access_events a JOIN people p ON p.id = a.person_id"
            " WHERE a.kind = 'revoke'"
        ).fetchall()
        audited = conn.execute(
            "SELECT count(*) FROM audit_log WHERE action = 'memberships.remove'"
        ).fetchone()
    assert revoked == [(PEOPLE[3],)]
    assert audited == (1,)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert accessibility_problems(page) == []
    page.screenshot(path=str(ARTIFACTS / "members-removed-fa-390.png"), full_page=True)


def test_members_bulk__all_that_match_the_filter_chosen_past_one_page_and_extended_in_batches(
    page: Page, stack: Stack
) -> None:
    chosen_channel = gateways.add_paid_channel(stack.database_url)
    other = gateways.add_paid_channel(stack.database_url, chat_id=-1001000000002)
    users = {chosen_channel: (9000, 9229), other: (9300, 9302)}
    # The members written as billing keeps them (a grant each through the API would be 233
    # calls to set the scene).
    with psycopg.connect(stack.database_url) as conn:
        for channel, (first, last) in users.items():
            conn.execute(
                "WITH p AS (INSERT INTO people (telegram_user_id)"
                " SELECT u FROM generate_series(%s::bigint, %s::bigint) u RETURNING id)"
                " INSERT INTO memberships (person_id, channel_id, status, expires_at,"
                " grace_days, next_check_at, updated_at)"
                " SELECT id, %s, 'active', now() + interval '10 days', 3,"
                " now() + interval '10 days', now() FROM p",
                (first, last, channel),
            )

    def expiries_in(channel: int) -> list[dt.datetime]:
        with psycopg.connect(stack.database_url) as conn:
            rows = conn.execute(
                "SELECT expires_at FROM memberships WHERE channel_id = %s", (channel,)
            ).fetchall()
        return [at for (at,) in rows]

    before = {channel: expiries_in(channel) for channel in users}
    sign_in(page, stack.url)
    page.goto(f"{stack.url}/memberships?channel={chosen_channel}")
    rows = page.locator("#memberships tbody tr")
    expect(rows).to_have_count(50)
    matching = page.locator("#memberships-matching")
    expect(matching).to_be_hidden()
    page.check("#memberships input[data-select-all]")
    expect(matching).to_contain_text("The 50 shown are chosen; more match the filter.")
    page.click("#memberships-choose-matching")
    expect(matching).to_have_text("All 230 that match the filter are chosen.")
    expect(rows).to_have_count(230)
    expect(page.locator("#memberships input[data-select]:checked")).to_have_count(230)
    page.fill("#extend-days", "7")
    page.click("#extend")
    expect(page.locator(".bulk .asking")).to_contain_text("Extend 230 members by 7 days?")
    page.click("[data-confirm=extend]")
    # Counted, not listed one by one; nobody outside the filter touched.
    # (230 grants asked of billing: given time on a slow machine.)
    expect(page.locator("#bulk-results li[data-summary=extended]")).to_have_text(
        "230 extended", timeout=30_000
    )
    expect(page.locator("#bulk-results li[data-outcome]")).to_have_count(0)
    week = dt.timedelta(days=7)
    assert sorted(expiries_in(chosen_channel)) == sorted(at + week for at in before[chosen_channel])
    assert expiries_in(other) == before[other]
    # Two requests of at most 200, each under a key of the press's own.
    with psycopg.connect(stack.database_url) as conn:
        audited = conn.execute(
            "SELECT after->>'members' FROM audit_log WHERE action = 'memberships.extend'"
            " ORDER BY id"
        ).fetchall()
    assert audited == [("200",), ("30",)]
    assert accessibility_problems(page) == []
    page.screenshot(path=str(ARTIFACTS / "members-matching-en.png"))
