"""A message to some, not all, as an owner sends it: two members ticked on the Memberships page
and messaged from there (the composer opens with them), then a broadcast to a channel's
active members in one language, set to start at a time on the workspace's clock; a status
without its channel refused at the channel's box, in Persian."""

from __future__ import annotations

import datetime as dt

import psycopg
from playwright.sync_api import Page, expect

from tests.billing.e2e import gateways
from tests.panel_api.browser.conftest import (
    ARTIFACTS,
    Stack,
    accessibility_problems,
    open_form,
    persian,
    sign_in,
)

PEOPLE = (8301, 8302, 8303, 8304)


def setup(stack: Stack) -> int:
    """The bot's four people, who started it; the first three active in a paid channel, the
    fourth in grace; the workspace in Tehran."""
    channel = gateways.add_paid_channel(stack.database_url)
    with psycopg.connect(stack.database_url) as conn:
        conn.execute(
            "WITH p AS (INSERT INTO people (telegram_user_id, first_name, username)"
            " SELECT u, 'P' || u, 'p' || u FROM unnest(%s::bigint[]) u RETURNING id)"
            " INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at,"
            " started_at) SELECT (SELECT min(id) FROM bots), id, now(), now(), now() FROM p",
            (list(PEOPLE),),
        )
        conn.execute(
            "INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,"
            " next_check_at, updated_at)"
            " SELECT id, %s, CASE WHEN telegram_user_id = %s THEN 'grace' ELSE 'active' END,"
            " now() + interval '9 days', 3, now(), now() FROM people"
            " WHERE telegram_user_id = ANY(%s)",
            (channel, PEOPLE[3], list(PEOPLE)),
        )
        conn.execute("UPDATE workspace SET time_zone = 'Asia/Tehran'")
    return channel


def broadcasts(stack: Stack) -> list[tuple[object, ...]]:
    with psycopg.connect(stack.database_url) as conn:
        return conn.execute(
            "SELECT people, channel_id, member_status, language, starts_at FROM broadcasts"
            " ORDER BY id"
        ).fetchall()


def test_broadcast_audience__the_chosen_messaged_then_a_channels_active_at_a_set_time(
    page: Page, stack: Stack
) -> None:
    channel = setup(stack)
    sign_in(page, stack.url)
    page.click("#pages a[data-view=memberships]")
    rows = page.locator("#memberships tbody tr")
    expect(rows).to_have_count(4)
    for user in PEOPLE[:2]:
        rows.filter(has_text=str(user)).locator("input[data-select]").check()
    page.click("#message-chosen")
    # On the broadcasts page, the composer open with the two as its audience.
    expect(page.locator("main h1")).to_have_text("Broadcasts")
    expect(page.locator("dialog[open] #add-broadcast")).to_be_visible()
    expect(page.locator("#broadcast-chosen")).to_contain_text(
        "To the 2 members chosen on Memberships."
    )
    form = page.locator("#add-broadcast")
    form.locator("textarea[name=text]").fill("For the two of you")
    form.locator("input[name=to]").fill("@p8301")
    form.locator("button[type=submit]").click()
    send = page.locator("#broadcast-tested button")
    expect(send).to_have_text("Send to the 2 it reaches")
    send.click()
    page.click("[data-confirm]")
    expect(page.locator("#broadcast-audience")).to_have_text("2 chosen by hand")
    with psycopg.connect(stack.database_url) as conn:
        ids = dict(
            conn.execute(
                "SELECT telegram_user_id, id FROM people WHERE telegram_user_id = ANY(%s)",
                (list(PEOPLE),),
            ).fetchall()
        )
    assert broadcasts(stack) == [(sorted([ids[PEOPLE[0]], ids[PEOPLE[1]]]), None, None, None, None)]
    page.screenshot(path=str(ARTIFACTS / "broadcast-chosen-en.png"), full_page=True)

    # A channel's active members who read English, from 18:30 in ten days, Tehran's clock.
    page.click("#pages a[data-view=broadcasts]")
    open_form(page, "add-broadcast")
    expect(page.locator("#broadcast-chosen")).to_have_count(0)
    form.locator("textarea[name=text]").fill("Renewal week")
    form.locator("select[name=channel_id]").select_option(str(channel))
    form.locator("select[name=member_status]").select_option("active")
    form.locator("select[name=language]").select_option("en")
    day = (dt.datetime.now(dt.UTC) + dt.timedelta(days=10)).date()
    form.locator("input[name=starts_at]").fill(day.isoformat())
    form.locator("input[name=starts_time]").fill("18:30")
    form.locator("input[name=to]").fill("@p8301")
    form.locator("button[type=submit]").click()
    expect(send).to_contain_text("to 3 as of now")
    send.click()
    page.click("[data-confirm]")
    expect(page.locator("#broadcast-audience")).to_have_text(
        "members of \u2068Paid\u2069, active, English"
    )
    [_, kept] = broadcasts(stack)
    starts = dt.datetime.combine(day, dt.time(15, 0), dt.UTC)
    assert kept == (None, channel, "active", "en", starts)
    expect(page.locator("#broadcast-progress [data-state=scheduled]")).to_be_visible()
    page.click("#pages a[data-view=broadcasts]")
    expect(page.locator("#broadcasts [data-state=scheduled]")).to_have_count(1)

    # In Persian, on a phone: a status without its channel refused at the channel's box.
    page.set_viewport_size({"width": 390, "height": 844})
    drawn = page.locator("#view h1").element_handle()
    persian(page)
    drawn.wait_for_element_state("hidden")
    open_form(page, "add-broadcast")
    form.locator("textarea[name=text]").fill("سلام")
    form.locator("select[name=member_status]").select_option("grace")
    form.locator("input[name=to]").fill("@p8301")
    form.locator("button[type=submit]").click()
    problem = form.locator("[id$=-problem]").filter(has_text="این را پر کنید.")
    expect(problem).to_have_count(1)
    channel_box = form.locator("select[name=channel_id]")
    expect(channel_box).to_have_attribute("aria-invalid", "true")
    assert len(broadcasts(stack)) == 2
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert accessibility_problems(page) == []
    page.screenshot(path=str(ARTIFACTS / "broadcast-audience-fa-390.png"), full_page=True)
