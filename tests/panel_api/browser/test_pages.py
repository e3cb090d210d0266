"""Every page of the panel as a person meets it: at 1280 and 390 px in English and Persian (a
screenshot of each in tests/artifacts/pages/), a page that does not exist, a view that is still
loading or fails to load, a session ended elsewhere, and amounts in each currency's digits."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

import psycopg
import pytest
from playwright.sync_api import Page, Route, expect

from panel_api.app import create_app
from panel_api.seed import seed
from shared.clock import ManualClock
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot
from tests.conftest import TEST_BCRYPT_ROUNDS, panel_settings
from tests.panel_api.browser.conftest import (
    ARTIFACTS,
    PASSWORD,
    accessibility_problems,
    focus_problems,
    sign_in,
)
from tests.panel_api.history import add_stars, seed_history

VIEWS = (
    "dashboard",
    "bots",
    "channels",
    "plans",
    "coupons",
    "access-codes",
    "contents",
    "campaigns",
    "broadcasts",
    "stats",
    "people",
    "memberships",
    "invoices",
    "payments",
    "access-events",
    "orders",
    "slots",
    "admission",
    "reconcile",
    "dead-updates",
    "team",
    "audit",
    "workspace",
    "account",
)

# The people list's Telegram id column, by its heading.
LABELS = {"en": "Telegram user", "fa": "کاربر تلگرام"}


@pytest.fixture
def business(panel: str, database_url: str) -> str:
    """The panel over a month of made-up business."""
    assert seed_history(database_url) is True
    return panel


@pytest.mark.slow(50)
@pytest.mark.parametrize("language", ["en", "fa"])
def test_pages__every_page_at_1280_and_390_px_without_sideways_scroll(
    page: Page,
    business: str,
    language: str,
) -> None:
    shots = ARTIFACTS / "pages"
    shots.mkdir(parents=True, exist_ok=True)
    page.goto(business)
    expect(page.locator("#sign-in")).to_be_visible()
    # The language chosen before signing in is kept.
    page.select_option("#language", language)
    problems = {"the sign-in form": accessibility_problems(page)}
    unseen = {"the sign-in form": focus_problems(page)}
    sign_in(page, business)
    expect(page.locator("#who")).to_be_visible()
    expect(page.locator("html")).to_have_attribute("lang", language)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        menu = page.locator("#menu")
        for view in VIEWS:
            if width == 390:
                # The links fold into the menu on a phone.
                expect(page.locator("#pages a[data-view=dashboard]")).to_be_hidden()
                menu.click()
                expect(menu).to_have_attribute("aria-expanded", "true")
            else:
                expect(menu).to_be_hidden()
            page.click(f"#pages a[data-view={view}]")
            expect(page.locator(f"#pages a[data-view={view}]")).to_have_attribute(
                "aria-current", "page"
            )
            expect(page.locator("main h1")).to_be_focused()
            expect(page.locator("#loading")).to_be_hidden()
            if view == "dashboard":
                # The bot Telegram has been failing for, in the page's language.
                outage = page.locator("[data-outage]")
                expect(outage).to_be_visible()
                expect(outage).to_contain_text("تلگرام" if language == "fa" else "Telegram")
            if view == "people":
                # A Telegram id in the page's digits, kept left to right.
                ids = page.locator(f'#people td[data-label="{LABELS[language]}"]')
                expect(ids.first).to_be_visible()
                shown = ids.first.inner_text().strip("\u2066\u2069")
                latin = re.fullmatch(r"[0-9]+", shown)
                persian = re.fullmatch(r"[\u06f0-\u06f9]+", shown)
                assert persian if language == "fa" else latin, shown
            if view == "payments":
                # Why a gateway event needs the owner, in the page's language and digits (not
                # billing's English detail, "paid 499, invoice asks 500").
                note = page.locator("#gateway-events li").first
                expect(note).to_contain_text(
                    # $4.99 and $5.00 in Persian digits, each marked left-to-right as money
                    # is on every Persian page.
                    "\u200e$\u06f4\u066b\u06f9\u06f9 پرداخت شد، صورت‌حساب"
                    " \u200e$\u06f5\u066b\u06f0\u06f0 می‌خواهد"
                    if language == "fa"
                    else "$4.99 paid, the invoice asks $5.00"
                )
                expect(note).not_to_contain_text("invoice asks 500")
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, f"{view} at {width} px in {language} scrolls sideways"
            problems[f"{view} at {width} px"] = accessibility_problems(page)
            page.screenshot(path=str(shots / f"{view}-{language}-{width}.png"), full_page=True)
            unseen[f"{view} at {width} px"] = focus_problems(page)
    # axe-core finds nothing critical or serious on any page, at either width; every control
    # the keyboard reaches shows its focus.
    assert {where: found for where, found in problems.items() if found} == {}
    assert {where: found for where, found in unseen.items() if found} == {}


def test_pages__an_unknown_address_is_a_page_that_says_so(page: Page, panel: str) -> None:
    sign_in(page, panel)
    expect(page.locator("#who")).to_be_visible()
    page.goto(f"{panel}/no-such-page")
    expect(page.locator("main h1")).to_have_text("This page does not exist.")
    expect(page.locator("#who")).to_have_count(0)
    expect(page.locator("#pages a[aria-current]")).to_have_count(0)
    page.click("#not-found a")
    expect(page.locator("#who")).to_be_visible()
    assert page.url == f"{panel}/"


def test_pages__while_a_view_loads_the_old_one_stays_and_a_failed_one_says_why(
    page: Page,
    panel: str,
) -> None:
    held: list[Route] = []
    sign_in(page, panel)
    expect(page.locator("#who")).to_be_visible()
    page.route("**/v1/people?*", lambda route: held.append(route))
    page.click("#pages a[data-view=people]")
    expect(page.locator("#loading")).to_be_visible()
    # Nothing moved yet: the address, the highlighted link and the page are the dashboard's.
    while not held:
        page.wait_for_timeout(20)
    assert page.url == f"{panel}/"
    expect(page.locator("#pages a[data-view=dashboard]")).to_have_attribute("aria-current", "page")
    expect(page.locator("#who")).to_be_visible()
    held[0].continue_()
    expect(page.locator("main h1")).to_have_text("People")
    expect(page.locator("#loading")).to_be_hidden()
    assert page.url == f"{panel}/people"

    page.route("**/v1/invoices?*", lambda route: route.abort())
    page.click("#pages a[data-view=invoices]")
    expect(page.locator("#message")).to_have_text("The panel API could not be reached.")
    expect(page.locator("main h1")).to_have_text("People")
    assert page.url == f"{panel}/people"


@pytest.fixture
def clocked(database_url: str) -> Iterator[tuple[str, ManualClock]]:
    insert_bot(database_url)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    clock = ManualClock(dt.datetime.now(dt.UTC))
    with serve_in_thread(create_app(panel_settings(database_url), clock=clock)) as url:
        yield url, clock


def test_pages__a_session_ended_in_another_tab_shows_the_sign_in_form_on_the_next_step(
    page: Page,
    clocked: tuple[str, ManualClock],
) -> None:
    url, clock = clocked
    sign_in(page, url)
    expect(page.locator("#who")).to_be_visible()
    other = page.context.new_page()
    other.goto(url)
    expect(other.locator("#who")).to_be_visible()
    other.click("#sign-out")
    expect(other.locator("#sign-in")).to_be_visible()
    # The first tab's access token runs out; its cookie was ended with the session.
    clock.advance(16 * 60)
    page.click("#pages a[data-view=bots]")
    expect(page.locator("#sign-in")).to_be_visible()
    expect(page.locator("#message")).to_have_text("Your session has ended. Sign in again.")
    expect(page.locator("#bots")).to_have_count(0)
    expect(page.locator("#pages")).to_be_hidden()


def test_pages__yen_dinars_and_stars_in_their_own_digits(
    page: Page,
    panel: str,
    database_url: str,
) -> None:
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "WITH person AS (INSERT INTO people (telegram_user_id) VALUES (31) RETURNING id),"
            " plan AS (SELECT id, channel_id FROM plans WHERE is_default LIMIT 1)"
            " INSERT INTO invoices (order_reference, person_id, channel_id, plan_id,"
            "  amount_minor, currency, period_days, grace_days, gateway, expires_at)"
            " SELECT r, person.id, plan.channel_id, plan.id, a, c, 30, 3, 'subgate',"
            "  now() + interval '1 hour'"
            " FROM person, plan, (VALUES ('ref-jpy', 500, 'JPY'), ('ref-kwd', 1250, 'KWD'),"
            "  ('ref-xtr', 250, 'XTR')) AS v (r, a, c)"
        )
    sign_in(page, panel)
    expect(page.locator("#who")).to_be_visible()
    page.click("#pages a[data-view=invoices]")
    expect(page.locator("#invoices tbody tr", has_text="ref-jpy")).to_contain_text("¥500")
    expect(page.locator("#invoices tbody tr", has_text="ref-kwd")).to_contain_text("KWD\u00a01.250")
    expect(page.locator("#invoices tbody tr", has_text="ref-xtr")).to_contain_text("250 ⭐")
    page.select_option("#language", "fa")
    dinars = page.locator("#invoices tbody tr", has_text="ref-kwd")
    expect(dinars).to_contain_text("\u06f1\u066b\u06f2\u06f5\u06f0")  # 1.250 in Persian


ATTENTION = {
    "orders": "SELECT count(*) FROM ad_orders WHERE status = 'requested'",
    "access-events": "SELECT count(*) FROM access_events WHERE state = 'failed'",
    "dead-updates": "SELECT count(*) FROM inbox WHERE state = 'dead'",
}


def dead_update(database_url: str, update_id: int) -> None:
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload, state, done_at)"
            " SELECT id, %s, 1, 'message', '{}', 'dead', now() FROM bots ORDER BY id LIMIT 1",
            (update_id,),
        )


def counts(database_url: str) -> dict[str, int]:
    with psycopg.connect(database_url) as conn:
        return {view: conn.execute(sql).fetchone()[0] for view, sql in ATTENTION.items()}  # type: ignore[index]


def test_pages__the_pages_in_groups_beside_the_view_with_what_needs_the_owner_counted(
    page: Page, business: str, database_url: str
) -> None:
    dead_update(database_url, 900_001)
    sign_in(page, business)
    nav, main = page.locator("#pages"), page.locator("main")
    heads = page.locator("#pages .nav-head")
    expect(heads).to_have_text(["Selling", "Audience", "Ad shop", "Operations", "Settings"])
    # Each count as the ledger has it, beside its page; none where nothing waits.
    expected = counts(database_url)
    assert expected["dead-updates"] >= 1
    for view, count in expected.items():
        badge = page.locator(f"#pages a[data-view={view}] .needs")
        if count:
            expect(badge).to_contain_text(str(count))
        else:
            expect(badge).to_have_count(0)
    # Beside the view on a wide screen, at the start of the line.
    assert nav.bounding_box()["x"] + nav.bounding_box()["width"] <= main.bounding_box()["x"]  # type: ignore[index]
    page.screenshot(path=str(ARTIFACTS / "nav-en-1280.png"))

    # A new dead update is counted once the next view is drawn.
    dead_update(database_url, 900_002)
    page.click("#pages a[data-view=plans]")
    expect(page.locator("#pages a[data-view=plans]")).to_have_attribute("aria-current", "page")
    dead = str(expected["dead-updates"] + 1)
    expect(page.locator("#pages a[data-view=dead-updates] .needs")).to_contain_text(dead)

    # Persian: the groups in Persian, the side bar on the right, the figure in Persian digits.
    page.select_option("#language", "fa")
    expect(heads.first).to_have_text("فروش")
    in_persian = dead.translate(str.maketrans("0123456789", "۰۱۲۳۴۵۶۷۸۹"))
    expect(page.locator("#pages a[data-view=dead-updates] .needs")).to_contain_text(in_persian)
    assert nav.bounding_box()["x"] >= main.bounding_box()["x"] + main.bounding_box()["width"]  # type: ignore[index]
    assert accessibility_problems(page) == []
    # A phone: behind the menu, the groups and the current page inside it.
    page.set_viewport_size({"width": 390, "height": 844})
    expect(nav).to_be_hidden()
    page.click("#menu")
    expect(heads.nth(4)).to_be_visible()
    expect(page.locator("#pages a[aria-current=page]")).to_have_attribute("data-view", "plans")
    page.screenshot(path=str(ARTIFACTS / "nav-fa-390.png"), full_page=True)


def test_pages__the_dashboard_says_how_the_business_did_over_the_chosen_period(
    page: Page, business: str, database_url: str
) -> None:
    add_stars(database_url)
    with psycopg.connect(database_url) as conn:
        active = conn.execute("SELECT count(*) FROM memberships WHERE status = 'active'").fetchone()
        # Memberships begun since midnight (UTC, the workspace's zone) six days ago.
        new_in_7 = conn.execute(
            "SELECT count(*) FROM (SELECT min(at) AS at FROM membership_events"
            " GROUP BY person_id, channel_id) f"
            " WHERE at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
            "  - interval '6 days'"
        ).fetchone()
    assert active is not None and new_in_7 is not None
    sign_in(page, business)
    expect(page.locator("[data-figure=active]")).to_have_text(str(active[0]))
    expect(page.locator("[data-headline=recurring] .figure").first).to_be_visible()
    expect(page.locator("[data-headline=recurring] .before").first).to_contain_text(
        "at the period's start"
    )
    # Stars apart: subscriptions Telegram charges again, and one-off payments.
    expect(page.locator("[data-stars=starsSubscriptions] .figure")).to_contain_text("500")
    expect(page.locator("[data-stars=starsOneOff] .figure")).to_contain_text("600")
    expect(page.locator("[data-stars=starsOneOff] .before")).to_contain_text("100")
    expect(page.locator("#period")).to_have_value("30")
    # What each channel and plan brought, as many rows as channels and plans were paid for.
    with psycopg.connect(database_url) as conn:
        paid_for = conn.execute(
            "SELECT count(DISTINCT (p.channel_id, p.currency)),"
            " count(DISTINCT (i.plan_id, p.currency))"
            " FROM payments p JOIN invoices i ON i.id = p.invoice_id WHERE p.applied"
            " AND p.paid_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
            "  - interval '29 days'"
        ).fetchone()
    assert paid_for is not None and paid_for[0] > 0
    expect(page.locator("#by-channel tbody tr")).to_have_count(paid_for[0])
    expect(page.locator("#by-plan tbody tr")).to_have_count(paid_for[1])
    page.select_option("#period", "7")
    expect(page).to_have_url(re.compile(r"/\?period=7$"))
    expect(page.locator("[data-figure=new]")).to_have_text(str(new_in_7[0]))
    expect(page.locator("[data-before=new]")).to_contain_text("before")
    page.screenshot(path=str(ARTIFACTS / "dashboard-headlines-en.png"), full_page=True)
    # Persian: the same figures in Persian digits; on a phone, within the width.
    page.select_option("#language", "fa")
    in_persian = str(new_in_7[0]).translate(str.maketrans("0123456789", "۰۱۲۳۴۵۶۷۸۹"))
    expect(page.locator("[data-figure=new]")).to_have_text(in_persian)
    expect(page.locator("[data-before=new]")).to_contain_text("پیش")
    assert accessibility_problems(page) == []
    page.set_viewport_size({"width": 390, "height": 844})
    expect(page.locator("[data-figure=new]")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(ARTIFACTS / "dashboard-headlines-fa-390.png"), full_page=True)
