"""The panel page in headless Chromium (Debian's, driven by Playwright): sign-in, a reload that
keeps the session through the refresh cookie, Persian right to left, the API's own messages."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import psycopg
import pytest
from playwright.sync_api import Page, Route, expect

from panel_api.app import create_app
from panel_api.seed import seed
from shared.clock import ManualClock
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot, new_token
from tests.conftest import (
    HTTP,
    TEST_BCRYPT_ROUNDS,
    Serve,
    panel_settings,
    serve_botedge_api,
    serve_simtelegram,
)
from tests.panel_api.browser.conftest import ARTIFACTS, PASSWORD, open_form, sign_in
from tests.panel_api.e2e.conftest import SHOP, owner_and_viewer, start_billing
from tests.panel_api.history import seed_history


def test_page__sign_in_then_a_reload_keeps_the_session(page: Page, panel: str) -> None:
    sign_in(page, panel)
    expect(page.locator("#who")).to_have_text("Signed in as owner@example.com (owner)")
    expect(page.locator("[data-figure=ordersWaiting]")).to_have_text("0")
    # The access token lived in memory only: the reload signs in again by the refresh cookie.
    page.reload()
    expect(page.locator("#who")).to_have_text("Signed in as owner@example.com (owner)")
    page.click("#sign-out")
    expect(page.locator("#sign-in")).to_be_visible()
    page.reload()
    expect(page.locator("#sign-in")).to_be_visible()


def test_page__persian_lays_out_right_to_left_with_persian_digits(
    page: Page, panel: str, database_url: str
) -> None:
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload, state, attempt)"
            " SELECT id, 1, 1, 'message', '{}', 'dead', 5 FROM bots"
        )
    sign_in(page, panel)
    expect(page.locator("[data-figure=deadUpdates]")).to_have_text("1")
    page.select_option("#language", "fa")
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    expect(page.locator("html")).to_have_attribute("lang", "fa")
    expect(page.locator("[data-figure=deadUpdates]")).to_have_text("\u06f1")  # Persian one
    expect(page.locator("#who")).to_contain_text("وارد شده با")
    # Remembered by this browser.
    page.reload()
    expect(page.locator("html")).to_have_attribute("dir", "rtl")


def test_page__a_refused_sign_in_says_so_in_the_pages_language(page: Page, panel: str) -> None:
    sign_in(page, panel, password="not the password", wait=False)
    expect(page.locator("#message")).to_have_text("The email or password is wrong.")
    page.select_option("#language", "fa")
    page.fill("input[name=password]", "still not it")
    page.click("#sign-in button[type=submit]")
    expect(page.locator("#message")).to_have_text("ایمیل یا گذرواژه درست نیست.")
    # Signed out, the page is the sign-in form and nothing else.
    expect(page.locator("#pages")).to_be_hidden()
    expect(page.locator("#pages a").first).to_be_hidden()
    expect(page.locator("#sign-out")).to_be_hidden()


def test_page__served_for_any_view_never_for_the_api(panel: str) -> None:
    for path in ("/", "/channels", "/ad-orders/12"):
        answer = HTTP.get(f"{panel}{path}")
        assert answer.status_code == 200, path
        assert '<script type="module" src="/assets/app.js">' in answer.text
        assert "default-src 'self'" in answer.headers["content-security-policy"]
    for path in ("/v1/nothing", "/internal/x", "/assets/missing.js", "/openapi.json/x"):
        answer = HTTP.get(f"{panel}{path}")
        assert answer.status_code == 404, path
    assert HTTP.post(f"{panel}/channels").status_code == 404
    script = HTTP.get(f"{panel}/assets/app.js")
    assert (script.status_code, script.headers["content-type"].split(";")[0]) == (
        200,
        "text/javascript",
    )


def test_page__first_run_setup_on_an_empty_database(page: Page, database_url: str) -> None:
    codes: list[str] = []
    app = create_app(panel_settings(database_url), announce=codes.append)
    with serve_in_thread(app) as url:
        page.goto(url)
        page.click("#first-start")
        page.fill("#setup input[name=code]", "WRONG-CODE-0000")
        page.fill("#setup input[name=email]", "first@example.com")
        page.fill("#setup input[name=password]", PASSWORD)
        page.click("#setup button[type=submit]")
        expect(page.locator("#message")).to_be_visible()
        assert codes, "panel-api announced a setup code"
        page.fill("#setup input[name=code]", codes[-1])
        page.click("#setup button[type=submit]")
        expect(page.locator("#who")).to_have_text("Signed in as first@example.com (owner)")


@pytest.fixture
def with_botedge(database_url: str, serve: Serve) -> Iterator[str]:
    """The panel beside botedge's API and the simulated Telegram, a viewer added."""
    sim = serve_simtelegram(serve)
    botedge = serve_botedge_api(serve, database_url, TELEGRAM_API_BASE=sim.url)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, BOTEDGE_URL=botedge.url)
    with serve_in_thread(create_app(settings)) as url:
        owner_and_viewer(url)
        yield url


def test_page__an_admin_adds_a_bot_and_a_viewer_finds_no_form(
    page: Page, with_botedge: str
) -> None:
    sign_in(page, with_botedge)
    page.click("a[data-view=bots]")
    expect(page.locator("#bots tbody tr")).to_have_count(0)
    open_form(page, "add-bot")
    page.fill("#add-bot input[name=token]", "not a token")
    page.click("#add-bot button[type=submit]")
    # Not shaped like a token: refused at the field by the schema, before botedge is asked.
    token = page.locator("#add-bot input[name=token]")
    expect(page.locator("#add-bot [data-problem=token]")).to_have_text("Not in the expected form.")
    expect(token).to_have_attribute("aria-invalid", "true")
    page.fill("#add-bot input[name=token]", new_token(5559001))
    page.click("#add-bot button[type=submit]")
    expect(page.locator("#bots tbody tr")).to_have_count(1)
    expect(page.locator("#bots tbody tr td").first).to_have_text("@sim5559001_bot")
    page.click("#sign-out")
    page.fill("input[name=email]", "v@example.com")
    page.fill("input[name=password]", "viewer password")
    page.click("#sign-in button[type=submit]")
    # Signed in again on the page they were on: the bots, without the form.
    expect(page.locator("#bots tbody tr")).to_have_count(1)
    expect(page.locator("#add-bot")).to_have_count(0)


def test_page__a_view_opened_while_the_dashboard_loads_is_not_painted_over(
    page: Page, panel: str
) -> None:
    held: list[Route] = []
    page.route("**/v1/dashboard", lambda route: held.append(route))
    sign_in(page, panel, wait=False)
    page.wait_for_function("() => document.querySelector('a[data-view=workspace]') !== null")
    while not held:
        # Playwright answers the held request only while it is given the event loop.
        page.wait_for_timeout(20)
    page.click("a[data-view=workspace]")
    held[0].continue_()
    expect(page.locator("#workspace")).to_be_visible()
    expect(page.locator("#who")).to_have_count(0)
    assert page.url.endswith("/workspace")


def test_page__the_owner_sets_the_workspace_and_a_bad_address_is_refused(
    page: Page, panel: str
) -> None:
    sign_in(page, panel)
    page.click("a[data-view=workspace]")
    page.fill("#workspace input[name=tron_address]", "T123")
    page.click("#workspace button[type=submit]")
    # Refused at the field, in words, with the focus on it; not in a banner.
    address = page.locator("#workspace input[name=tron_address]")
    expect(page.locator("#workspace [data-problem=tron_address]")).to_have_text(
        "Not in the expected form."
    )
    expect(address).to_have_attribute("aria-invalid", "true")
    expect(address).to_be_focused()
    expect(page.locator("#message")).to_be_hidden()
    page.fill("#workspace input[name=tron_address]", "")
    page.fill("#workspace input[name=time_zone]", "Asia/Tehran")
    page.click("#workspace button[type=submit]")
    expect(page.locator("#workspace-done")).to_have_text("Saved.")
    expect(page.locator("#message")).to_be_hidden()
    assert HTTP.get(f"{panel}/v1/workspace", headers=bearer(panel)).json()["time_zone"] == (
        "Asia/Tehran"
    )
    # The audit log: who made the change, what it was, and each field before and after.
    page.click("a[data-view=audit]")
    page.select_option("select[data-filter=kind]", "workspace")
    page.select_option("select[data-filter=member]", label="owner@example.com")
    # Each filter is drawn in turn and kept in the address: waited on, since the list before
    # them already shows the one row checked below.
    expect(page).to_have_url(re.compile(r"\?(?=.*\bkind=workspace\b)(?=.*\bmember=)"))
    row = page.locator("#audit tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("owner@example.com")
    expect(row).to_contain_text("Workspace: changed")
    row.locator("summary").click()
    expect(row.locator("dl.change dt")).to_have_text(["time_zone"])
    expect(row.locator("dl.change dd")).to_have_text('"UTC" → "Asia/Tehran"')
    page.select_option("#language", "fa")
    expect(page.locator("#audit tbody tr")).to_contain_text("فضای کار: تغییر کرد")
    page.select_option("select[data-filter=kind]", "team")
    expect(page.locator("#audit tbody tr")).to_have_count(0)
    expect(page.locator("#view .empty")).to_be_visible()


def test_page__too_many_tries_say_how_long_to_wait(page: Page, panel: str) -> None:
    for _ in range(10):
        HTTP.post(f"{panel}/v1/auth/login", json={"email": "owner@example.com", "password": "x"})
    sign_in(page, panel, password="still wrong", wait=False)
    expect(page.locator("#message")).to_contain_text("Try again in")


def bearer(url: str) -> dict[str, str]:
    token = HTTP.post(
        f"{url}/v1/auth/login", json={"email": "owner@example.com", "password": PASSWORD}
    ).json()["access_token"]
    return {"Authorization": f"Bearer {token}"}


def pay(database_url: str, day_offset: int, amount_minor: int, currency: str, n: int) -> None:
    """An applied payment `day_offset` days ago, on the seeded demo channel, and the membership
    it began."""
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "WITH person AS (INSERT INTO people (telegram_user_id) VALUES (%(user)s) RETURNING id),"
            " plan AS (SELECT id, channel_id FROM plans WHERE is_default LIMIT 1),"
            " invoice AS (INSERT INTO invoices (order_reference, person_id, channel_id, plan_id,"
            "  amount_minor, currency, period_days, grace_days, gateway, status, expires_at,"
            "  paid_at)"
            "  SELECT 'ref-' || %(user)s, person.id, plan.channel_id, plan.id, %(amount)s,"
            "   %(currency)s, 30, 3, 'subgate', 'paid', now(), now() - %(days)s * interval '1 day'"
            "  FROM person, plan RETURNING id, person_id, channel_id, paid_at)"
            " , payment AS (INSERT INTO payments (gateway, external_payment_id, invoice_id,"
            "  person_id, channel_id, amount_minor, currency, paid_at, applied)"
            "  SELECT 'subgate', 'pay-' || %(user)s, id, person_id, channel_id, %(amount)s,"
            "   %(currency)s, paid_at, true FROM invoice"
            "  RETURNING id, person_id, channel_id, paid_at),"
            " membership AS (INSERT INTO memberships (person_id, channel_id, status, expires_at,"
            "  grace_days, next_check_at, updated_at)"
            "  SELECT person_id, channel_id, 'active', paid_at + interval '30 days', 3,"
            "   paid_at + interval '30 days', paid_at FROM payment RETURNING person_id)"
            " INSERT INTO membership_events (person_id, channel_id, to_status, new_expires_at,"
            "  cause, payment_id, paid_at, period_days, at)"
            " SELECT p.person_id, p.channel_id, 'active', p.paid_at + interval '30 days',"
            "  'payment', p.id, p.paid_at, 30, p.paid_at"
            "  FROM payment p JOIN membership m ON m.person_id = p.person_id",
            {"user": 900 + n, "amount": amount_minor, "currency": currency, "days": day_offset},
        )


def test_page__dashboard_counts_link_to_their_pages_and_revenue_is_charted_per_currency(
    page: Page, panel: str, database_url: str
) -> None:
    pay(database_url, 0, 500, "USD", 1)
    pay(database_url, 3, 700, "USD", 2)
    pay(database_url, 5, 12_000, "UAH", 3)
    pay(database_url, 45, 900, "USD", 4)  # outside the 30 days
    sign_in(page, panel)
    expect(page.locator("#revenue polyline")).to_have_count(2)
    expect(page.locator(".legend li[data-series=USD]")).to_have_text("USD: $12.00")
    expect(page.locator(".legend li[data-series=UAH]")).to_contain_text("120")
    # Each currency on its own scale: $7 a day tops its chart at 8, 120 hryvnias theirs at 150
    # (on one axis the dollars would lie along the floor).
    expect(page.locator("#revenue-USD .tick").last).to_have_text("8")
    expect(page.locator("#revenue-UAH .tick").last).to_have_text("150")
    # The members chart: each payment began a membership, and no sweep has ended one.
    expect(page.locator("#members polyline")).to_have_count(2)
    expect(page.locator("#members + .legend li[data-series=active]")).to_have_text(
        "Active: 4 today"
    )
    expect(page.locator("#members-summary")).to_contain_text("In grace: 0 today")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
    page.click("a[data-tile=membersActive]")
    expect(page.locator("select[data-filter=status]")).to_have_value("active")
    assert page.url.endswith("/memberships?status=active")


@pytest.fixture
def shop(database_url: str, serve: Serve) -> Iterator[str]:
    """The panel beside billing (and the simulated TronGrid behind it), two ad orders waiting."""
    billing = start_billing(serve, database_url)
    bot, _, _ = insert_bot(database_url)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, BILLING_URL=billing)
    with serve_in_thread(create_app(settings)) as url:
        owner = owner_and_viewer(url)["owner"]
        headers = {"Authorization": f"Bearer {owner}"}
        HTTP.patch(f"{url}/v1/workspace", json={"tron_address": SHOP}, headers=headers)
        slot = HTTP.post(
            f"{url}/v1/ad-slots",
            json={"bot_id": bot, "kind": "pinned_post", "title": "Pinned", "price": "12.5"},
            headers=headers,
        ).json()["id"]
        with psycopg.connect(database_url) as conn:
            person = conn.execute(
                "INSERT INTO people (telegram_user_id) VALUES (77) RETURNING id"
            ).fetchone()
            assert person is not None
            for text in ("Buy our course", "Join the sale"):
                conn.execute(
                    "INSERT INTO ad_orders (slot_id, person_id, ad, price_micros, accepts_usdt,"
                    " accepts_trx) VALUES (%s, %s, %s, 12500000, true, true)",
                    (slot, person[0], psycopg.types.json.Jsonb({"text": text})),
                )
        yield url


def test_page__the_owner_approves_an_ad_order_then_reads_the_orders_in_persian(
    page: Page, shop: str
) -> None:
    sign_in(page, shop)
    expect(page.locator("[data-figure=ordersWaiting]")).to_have_text("2")
    page.click("a[data-tile=ordersWaiting]")
    expect(page.locator("#orders tbody tr")).to_have_count(2)
    first = page.locator("#orders tbody tr", has_text="Buy our course")
    first.locator("button[data-action=approve]").click()
    # Approved through billing: the list now shows only the one still waiting.
    expect(page.locator("#orders tbody tr")).to_have_count(1)
    page.select_option("select[data-filter=status]", "approved")
    approved = page.locator("#orders tbody tr", has_text="Buy our course")
    expect(approved).to_contain_text("approved, awaiting payment")
    expect(approved).to_contain_text("12.5 USDT")
    expect(approved.locator("button")).to_have_count(0)
    page.select_option("#language", "fa")
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    expect(approved).to_contain_text("تأییدشده، در انتظار پرداخت")
    # 12.5 in Persian digits with the Persian decimal separator.
    expect(approved).to_contain_text("\u06f1\u06f2\u066b\u06f5 USDT")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "orders-fa.png"), full_page=True)


def test_page__a_viewer_finds_no_write_control_on_any_page(page: Page, shop: str) -> None:
    page.goto(shop)
    page.fill("input[name=email]", "v@example.com")
    page.fill("input[name=password]", "viewer password")
    page.click("#sign-in button[type=submit]")
    expect(page.locator("#who")).to_contain_text("(viewer)")
    for hidden in ("dead-updates", "team", "audit"):
        expect(page.locator(f"#pages a[data-view={hidden}]")).to_be_hidden()
    views = (
        "orders",
        "slots",
        "admission",
        "bots",
        "channels",
        "contents",
        "campaigns",
        "broadcasts",
        "stats",
        "access-events",
    )
    for view in (*views, "workspace"):
        link = page.locator(f"#pages a[data-view={view}]")
        link.click()
        # Drawn: the link is marked only once the view is on the page.
        expect(link).to_have_attribute("aria-current", "page")
        expect(page.locator("main table, main form").first).to_be_visible()
        # A form that only reads (the statistics' range) is no write control.
        writes = "main button[data-action], main form:not([data-reads]) button[type=submit]"
        expect(page.locator(writes)).to_have_count(0)
    expect(page.locator("#orders")).to_have_count(0)  # the last view drawn was the workspace
    page.click("#pages a[data-view=orders]")
    expect(page.locator("#orders tbody tr")).to_have_count(2)


def test_page__an_expired_access_token_is_renewed_by_the_cookie_on_use_and_on_reload(
    page: Page, database_url: str
) -> None:
    insert_bot(database_url)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    clock = ManualClock(dt.datetime.now(dt.UTC))
    answers: list[tuple[str, int]] = []
    page.on(
        "response",
        lambda r: answers.append((urlsplit(r.url).path, r.status)) if "/v1/" in r.url else None,
    )
    with serve_in_thread(create_app(panel_settings(database_url), clock=clock)) as url:
        # Signed in, and the counts beside the pages read after the dashboard was drawn.
        with page.expect_response(lambda r: r.url.endswith("/v1/attention")):
            sign_in(page, url)
        expect(page.locator("#who")).to_have_text("Signed in as owner@example.com (owner)")
        # Past the access token's 15 minutes: the next call is refused, renewed, then answered.
        clock.advance(16 * 60)
        answers.clear()
        page.click("#pages a[data-view=bots]")
        expect(page.locator("#bots tbody tr")).to_have_count(1)
        # The first call refused, the token renewed once, and every call then answered.
        assert answers[0][1] == 401 and [status for _, status in answers].count(401) == 1
        assert answers[1] == ("/v1/auth/refresh", 200)
        assert ("/v1/bots", 200) in answers
        expect(page.locator("#message")).to_be_hidden()
        clock.advance(16 * 60)
        page.reload()
        expect(page.locator("#bots tbody tr")).to_have_count(1)
        expect(page.locator("#sign-in")).to_have_count(0)


def test_page__admission_whitelist_import_and_mode_then_an_ad_slot(page: Page, shop: str) -> None:
    sign_in(page, shop)
    page.click("#pages a[data-view=admission]")
    page.fill("#whitelist-add input[name=telegram_user_id]", "4242")
    page.fill("#whitelist-add input[name=note]", "partner")
    page.click("#whitelist-add button[type=submit]")
    expect(page.locator("#whitelist tbody tr", has_text="4242")).to_contain_text("partner")
    page.fill("#import textarea[name=ids]", "5001\n5002\nnot-an-id\n4242")
    page.click("#import button[type=submit]")
    expect(page.locator("#import-done")).to_have_text("2 added of 3 accepted; 1 refused.")
    expect(page.locator("#whitelist tbody tr")).to_have_count(3)
    page.select_option("#mode select[name=admission]", "join_request")
    page.click("#mode button[type=submit]")
    expect(page.locator("#admission-mode")).to_contain_text("a join request the bot approves")
    partner = page.locator("#whitelist tbody tr", has_text="5001")
    partner.locator("button[data-action=remove]").click()
    # Removing asks first: "No" keeps the row, "Yes" removes it.
    partner.get_by_role("button", name="No, keep it").click()
    expect(page.locator("#whitelist tbody tr")).to_have_count(3)
    partner.locator("button[data-action=remove]").click()
    partner.locator("button[data-confirm=remove]").click()
    expect(page.locator("#whitelist tbody tr")).to_have_count(2)

    page.click("#pages a[data-view=slots]")
    expect(page.locator("#slots tbody tr")).to_have_count(1)
    open_form(page, "add-slot")
    page.fill("#add-slot input[name=title]", "Button for a week")
    page.select_option("#add-slot select[name=kind]", "button")
    page.fill("#add-slot input[name=price]", "1.1234567")
    page.click("#add-slot button[type=submit]")
    expect(page.locator("#add-slot [data-problem=price]")).to_have_text("Not in the expected form.")
    expect(page.locator("#add-slot input[name=price]")).to_be_focused()
    page.fill("#add-slot input[name=price]", "40")
    page.click("#add-slot button[type=submit]")
    made = page.locator("#slots tbody tr", has_text="Button for a week")
    expect(made).to_contain_text("40 USDT")
    made.locator("button[data-action=deactivate]").click()
    expect(page.locator("#slots tbody tr", has_text="Button for a week")).to_contain_text(
        "disabled"
    )


def test_page__a_heading_sorts_through_the_api_and_more_keeps_the_order(
    page: Page, panel: str, database_url: str
) -> None:
    assert seed_history(database_url) is True
    sign_in(page, panel)
    page.click("#pages a[data-view=people]")
    rows = page.locator("#people tbody tr")
    expect(rows).to_have_count(50)
    page.click("#people th button[data-sort=last_seen_at]")
    expect(page.locator("#people th[aria-sort=ascending] [data-sort=last_seen_at]")).to_be_visible()
    page.click("#people th button[data-sort=last_seen_at]")
    descending = page.locator("#people th[aria-sort=descending] [data-sort=last_seen_at]")
    expect(descending).to_be_visible()
    assert page.url.endswith("/people?sort=-last_seen_at")
    page.click("#people-more")
    expect(rows).to_have_count(60)
    # Each id kept left to right (U+2066 ... U+2069 around it).
    shown = [
        text.strip("\u2066\u2069")
        for text in page.locator("#people tbody tr td:first-child").all_inner_texts()
    ]
    with psycopg.connect(database_url) as conn:
        expected = [
            str(user)
            for (user,) in conn.execute(
                "SELECT p.telegram_user_id FROM bot_people bp JOIN people p ON p.id = bp.person_id"
                " ORDER BY bp.last_seen_at DESC, bp.bot_id DESC, bp.person_id DESC"
            )
        ]
    assert shown == expected
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / "people-sorted.png"))
    # The sort is in the address: a reload keeps it.
    page.reload()
    expect(descending).to_be_visible()
    expect(rows).to_have_count(50)
