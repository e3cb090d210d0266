"""Every form of the panel as an owner uses it, in English and Persian: a write that goes
through says so where it was made, a refused one shows each problem at its field in the page's
language, and a destructive one asks first."""

from __future__ import annotations

import csv
import itertools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import psycopg
import pytest
from playwright.sync_api import Page, expect

from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from tests.billing.e2e import gateways
from tests.botedge.conftest import insert_bot
from tests.botedge.e2e.conftest import FAST
from tests.conftest import (
    HTTP,
    SECRETS,
    TEST_BCRYPT_ROUNDS,
    Serve,
    ServiceProcess,
    panel_settings,
    serve_botedge_api,
    serve_simtelegram,
    service_env,
    wait_until,
)
from tests.panel_api.browser.conftest import ARTIFACTS, PASSWORD, sign_in
from tests.panel_api.e2e.conftest import SHOP, start_billing
from tests.panel_api.e2e.conftest import sign_in as api_sign_in
from tests.panel_api.history import seed_history

SPONSOR = -1001000000701
FA_DIGITS = str.maketrans("۰۱۲۳۴۵۶۷۸۹", "0123456789")
BOT = 5550701


@dataclass
class Stack:
    url: str
    database_url: str
    sim: str
    billing: str = ""


@pytest.fixture
def stack(database_url: str, serve: Serve) -> Iterator[Stack]:
    """The panel with botedge's API, the simulated Telegram and billing behind it; a bot the
    simulated Telegram knows, an admin in one channel there."""
    sim = serve_simtelegram(serve)
    botedge = serve_botedge_api(serve, database_url, TELEGRAM_API_BASE=sim.url)
    billing = start_billing(serve, database_url, BOTEDGE_URL=botedge.url)
    _, token, _ = insert_bot(database_url, BOT)
    HTTP.post(f"{sim.url}/_sim/bots", json={"token": token}).raise_for_status()
    HTTP.post(
        f"{sim.url}/_sim/chats",
        json={
            "id": SPONSOR,
            "type": "channel",
            "title": "Sponsor",
            "username": "sponsor_a",
            "admin_bots": [BOT],
        },
    ).raise_for_status()
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, BOTEDGE_URL=botedge.url, BILLING_URL=billing)
    with serve_in_thread(create_app(settings)) as url:
        yield Stack(url, database_url, sim.url, billing)


def persian(page: Page) -> None:
    page.select_option("#language", "fa")
    expect(page.locator("html")).to_have_attribute("dir", "rtl")


def test_forms__a_channel_found_then_sold_by_its_plan_with_refusals_at_the_field_in_persian(
    page: Page, stack: Stack
) -> None:
    sign_in(page, stack.url)
    persian(page)
    page.click("#pages a[data-view=channels]")
    page.fill("#add-channel input[name=chat]", "@nobody_here")
    page.click("#add-channel button[type=submit]")
    # Telegram knows no such channel: said at the field, in Persian.
    expect(page.locator("#add-channel [data-problem=chat]")).to_have_text("وجود ندارد.")
    expect(page.locator("#add-channel input[name=chat]")).to_be_focused()
    page.fill("#add-channel input[name=chat]", "@sponsor_a")
    page.click("#add-channel button[type=submit]")
    expect(page.locator("#add-channel-done")).to_contain_text("«Sponsor» پیدا شد")
    page.locator("#channels a", has_text="Sponsor").click()
    expect(page.locator("main h2")).to_have_text("Sponsor")
    expect(page.locator("#pages a[data-view=channels]")).to_have_attribute("aria-current", "page")
    # The plan's fields show once the channel is to be sold.
    expect(page.locator("#paid input[name=price]")).to_be_hidden()
    page.check("#paid input[name=is_paid]")
    page.fill("#paid input[name=price]", "4.001")
    page.fill("#paid input[name=currency]", "EUR")
    page.click("#paid button[type=submit]")
    expect(page.locator("#paid [data-problem=price]")).to_have_text(
        "برای این ارز رقم‌های پس از ممیز زیاد است."
    )
    expect(page.locator("#paid input[name=price]")).to_be_focused()
    page.fill("#paid input[name=price]", "4.50")
    page.fill("#paid input[name=reminder_hours]", "۷۲، 24")
    page.click("#paid button[type=submit]")
    expect(page.locator("#paid-done")).to_have_text("ذخیره شد.")
    expect(page.locator("#channel-facts")).to_contain_text("start=pay_")
    with psycopg.connect(stack.database_url) as conn:
        row = conn.execute(
            "SELECT c.is_paid, c.reminder_hours, p.price_minor, p.currency FROM channels c"
            " JOIN plans p ON p.channel_id = c.id AND p.is_default"
            " WHERE c.telegram_chat_id = %s",
            (SPONSOR,),
        ).fetchone()
    assert row == (True, [72, 24], 450, "EUR")
    page.screenshot(path=str(ARTIFACTS / "channel-fa.png"), full_page=True)

    # Members brought in until a day picked in the Persian calendar.
    page.click("#pages a[data-view=admission]")
    page.fill("#import textarea[name=ids]", "۴۲۰۰۰۱\n420002")
    page.select_option("#import select[name=action]", "grant")
    # There is no 31 Mehr: said at the day, before anything is sent.
    page.fill("#import input[name=until-day]", "۳۱")
    page.select_option("#import select[name=until-month]", "7")
    page.click("#import button[type=submit]")
    expect(page.locator("#import [data-problem=until]")).to_have_text("آن ماه چنین روزی ندارد.")
    expect(page.locator("#import input[name=until-day]")).to_be_focused()
    page.screenshot(path=str(ARTIFACTS / "admission-fa.png"), full_page=True)
    # 1 Farvardin of next Persian year: the Persian new year, 20 or 21 March.
    this_year = int(page.input_value("#import input[name=until-year]").translate(FA_DIGITS))
    page.fill("#import input[name=until-day]", "1")
    page.select_option("#import select[name=until-month]", "1")
    page.fill("#import input[name=until-year]", str(this_year + 1))
    page.click("#import button[type=submit]")
    expect(page.locator("#import-done")).to_contain_text("۲")
    with psycopg.connect(stack.database_url) as conn:
        ends = conn.execute(
            "SELECT DISTINCT expires_at::date FROM memberships m"
            " JOIN people p ON p.id = m.person_id WHERE p.telegram_user_id IN (420001, 420002)"
        ).fetchall()
    nowruz = this_year + 1 + 621
    assert ends in ([(date(nowruz, 3, 20),)], [(date(nowruz, 3, 21),)])


def test_forms__content_with_its_own_gate_edited_then_deleted_and_a_bots_default_gate(
    page: Page, stack: Stack
) -> None:
    sign_in(page, stack.url)
    page.click("#pages a[data-view=contents]")
    page.fill("#add-content input[name=code]", "ads")
    page.fill("#add-content textarea[name=body]", "The secret")
    page.select_option("#add-content select[name=gate]", "ownGate")
    page.check("#add-content fieldset input[type=checkbox] >> nth=0")
    page.click("#add-content button[type=submit]")
    expect(page.locator("#add-content [data-problem=code]")).to_have_text(
        "Kept for the system; choose another."
    )
    page.fill("#add-content input[name=code]", "promo")
    page.click("#add-content button[type=submit]")
    expect(page.locator("#add-content-done")).to_have_text(
        f"Content added. Its link: https://t.me/bot{BOT}?start=promo"
    )
    row = page.locator("#contents tbody tr", has_text="promo")
    expect(row).to_contain_text("Demo paid channel")
    row.locator("button[data-action=edit]").click()
    editing = page.locator("#contents tr.editing form")
    editing.locator("input[name=code]").fill("promo2")
    editing.locator("select[name=gate]").select_option("defaultGate")
    editing.locator("button[type=submit]").click()
    expect(page.locator("#contents tbody tr", has_text="promo2")).to_contain_text(
        "Bot's default gate"
    )
    page.locator("#contents tbody tr", has_text="promo2").locator(
        "button[data-action=delete]"
    ).click()
    page.locator("#contents button[data-confirm=delete]").click()
    expect(page.locator("#contents tbody tr")).to_have_count(0)

    # A private channel: visitors join it by a link the owner gives.
    with psycopg.connect(stack.database_url) as conn:
        conn.execute(
            "WITH c AS (INSERT INTO channels (telegram_chat_id, title) VALUES (-1001000000799,"
            " 'Hidden club') RETURNING id) INSERT INTO bot_channels (bot_id, channel_id, status,"
            " is_admin, can_invite_users) SELECT b.id, c.id, 'administrator', true, true"
            " FROM bots b, c"
        )
    page.click("#pages a[data-view=bots]")
    bot = page.locator("#bots tbody tr", has_text=f"@bot{BOT}")
    bot.locator("button[data-action=setDefaultGate]").click()
    gate = page.locator("#bots tr.editing form")
    gate.locator("label", has_text="Hidden club").locator("input[type=checkbox]").check()
    join = gate.locator("input[name^=join_url_]")
    join.fill("https://example.com/club")
    gate.locator("button[type=submit]").click()
    # Refused at the link's own box, not under the channel ticks.
    problem = join.get_attribute("aria-describedby")
    expect(page.locator(f"#{problem}")).not_to_be_empty()
    expect(gate.locator("[data-problem=channels]")).to_be_empty()
    expect(join).to_be_focused()
    gate.locator("label", has_text="Hidden club").locator("input[type=checkbox]").uncheck()
    join.fill("")
    gate.locator("label", has_text="Demo paid channel").locator("input[type=checkbox]").check()
    gate.locator("button[type=submit]").click()
    expect(page.locator("#bots tbody tr", has_text=f"@bot{BOT}")).to_contain_text(
        "Demo paid channel"
    )


def test_forms__the_team_invited_changed_and_disabled_and_ones_own_password_in_persian(
    page: Page, stack: Stack
) -> None:
    sign_in(page, stack.url)
    persian(page)
    page.click("#pages a[data-view=team]")
    page.fill("#invite input[name=email]", "ed@example.com")
    page.fill("#invite input[name=password]", "short")
    page.click("#invite button[type=submit]")
    expect(page.locator("#invite [data-problem=password]")).to_have_text("خیلی کوتاه است.")
    page.fill("#invite input[name=password]", "a long first password")
    page.click("#invite button[type=submit]")
    expect(page.locator("#invite-done")).to_have_text("ed@example.com اکنون می‌تواند وارد شود.")
    member = page.locator("#team tbody tr", has_text="ed@example.com")
    expect(member).to_contain_text("ویرایشگر")
    member.locator("button[data-action=changeRole]").click()
    page.locator("#team tr.editing select[name=role]").select_option("viewer")
    page.locator("#team tr.editing button[type=submit]").click()
    expect(member).to_contain_text("بیننده")
    member.locator("button[data-action=disable]").click()
    member.locator("button[data-confirm=disable]").click()
    expect(member.locator("button[data-action=enable]")).to_be_visible()

    page.click("#pages a[data-view=account]")
    page.fill("#password input[name=current_password]", "not it")
    page.fill("#password input[name=new_password]", "a brand new password")
    page.click("#password button[type=submit]")
    expect(page.locator("#password [data-problem=current_password]")).to_have_text("درست نیست.")
    page.fill("#password input[name=current_password]", PASSWORD)
    page.click("#password button[type=submit]")
    expect(page.locator("#password-done")).to_contain_text("گذرواژه تغییر کرد")
    # This session goes on; the new password is the one that signs in.
    page.click("#pages a[data-view=bots]")
    expect(page.locator("#bots tbody tr")).to_have_count(1)
    api_sign_in(stack.url, "owner@example.com", "a brand new password")


def test_forms__an_invoice_with_its_link_a_grant_for_days_and_a_dead_update_shown(
    page: Page, stack: Stack
) -> None:
    with psycopg.connect(stack.database_url) as conn:
        conn.execute(
            "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload, state, attempt)"
            ' SELECT id, 77, 1, \'message\', \'{"update_id": 77, "message": {"text": "hi"}}\','
            " 'dead', 5 FROM bots"
        )
    sign_in(page, stack.url)
    page.click("#pages a[data-view=invoices]")
    page.fill("#new-invoice input[name=telegram_user_id]", "12ab")
    page.click("#new-invoice button[type=submit]")
    expect(page.locator("#new-invoice [data-problem=telegram_user_id]")).to_have_text(
        "Enter a number."
    )
    page.fill("#new-invoice input[name=telegram_user_id]", "4242")
    page.click("#new-invoice button[type=submit]")
    made = page.locator("#new-invoice-done")
    expect(made).to_contain_text("Invoice for")
    expect(made.locator("code")).to_contain_text("https://")
    expect(page.locator("#invoices tbody tr", has_text="4242")).to_contain_text("open")

    page.click("#pages a[data-view=admission]")
    page.fill("#grant input[name=telegram_user_id]", "4343")
    page.fill("#grant input[name=until]", "0")
    page.fill("#grant input[name=reason]", "partner")
    page.click("#grant button[type=submit]")
    expect(page.locator("#grant [data-problem=until]")).to_have_text("Outside what is allowed.")
    page.fill("#grant input[name=until]", "30")
    page.click("#grant button[type=submit]")
    expect(page.locator("#grant-done")).to_contain_text("Access granted until")

    page.click("#pages a[data-view=dead-updates]")
    page.click("#dead-updates button[data-action=showUpdate]")
    expect(page.locator("#dead-updates pre.payload")).to_contain_text('"text": "hi"')


def an_order(stack: Stack, text: str) -> tuple[dict[str, str], int]:
    """The shop's address set, a pinned-post slot at 12.5 USDT and an order for it waiting:
    the owner's headers and the order's id."""
    owner = api_sign_in(stack.url, "owner@example.com", PASSWORD)
    headers = {"Authorization": f"Bearer {owner}"}
    HTTP.patch(f"{stack.url}/v1/workspace", json={"tron_address": SHOP}, headers=headers)
    with psycopg.connect(stack.database_url) as conn:
        [(bot,)] = conn.execute("SELECT id FROM bots").fetchall()
        slot = HTTP.post(
            f"{stack.url}/v1/ad-slots",
            json={"bot_id": bot, "kind": "pinned_post", "title": "Pinned", "price": "12.5"},
            headers=headers,
        ).json()["id"]
        [(order,)] = conn.execute(
            "WITH p AS (INSERT INTO people (telegram_user_id) VALUES (77) RETURNING id)"
            " INSERT INTO ad_orders (slot_id, person_id, ad, price_micros, accepts_usdt,"
            " accepts_trx) SELECT %s, p.id, json_build_object('text', %s::text), 12500000,"
            " true, true FROM p RETURNING id",
            (slot, text),
        ).fetchall()
    return headers, int(order)


def test_forms__a_slot_edited_and_an_order_approved_then_cancelled_from_its_own_page(
    page: Page, stack: Stack
) -> None:
    _, order = an_order(stack, "Buy our course")
    sign_in(page, stack.url)
    page.click("#pages a[data-view=slots]")
    row = page.locator("#slots tbody tr", has_text="Pinned")
    row.locator("button[data-action=edit]").click()
    editing = page.locator("#slots tr.editing form")
    editing.locator("input[name=price]").fill("0")
    editing.locator("button[type=submit]").click()
    expect(editing.locator("[data-problem=price]")).to_have_text("Outside what is allowed.")
    editing.locator("input[name=price]").fill("20")
    editing.locator("input[name=accepts_trx]").uncheck()
    editing.locator("button[type=submit]").click()
    expect(row).to_contain_text("20 USDT")
    expect(row).not_to_contain_text("TRX")

    page.click("#pages a[data-view=orders]")
    page.click(f"#orders a[href='/orders/{order}']")
    expect(page.locator("#order-facts")).to_contain_text("Buy our course")
    page.click("#order-steps button[data-action=approve]")
    expect(page.locator("#order-facts [data-status]")).to_have_text("approved, awaiting payment")
    expect(page.locator("#order-facts")).to_contain_text(SHOP)
    tx = "ab" * 32
    with psycopg.connect(stack.database_url) as conn:
        conn.execute(
            "INSERT INTO tron_claims (tx_hash, order_id, state) VALUES (%s, %s, 'rejected')",
            (tx, order),
        )
        # TronGrid was down when the claim was first checked: the advertiser was told to wait.
        conn.execute(
            "INSERT INTO ad_order_events (order_id, kind, detail, cause, state)"
            " VALUES (%s, 'claim_waiting', %s, 'claim:1', 'done')",
            (order, json.dumps({"tx_hash": tx})),
        )
    page.reload()
    link = page.locator(f"#order-claims a[href='https://tronscan.org/#/transaction/{tx}']")
    expect(link).to_have_text(tx)
    expect(page.locator("main")).to_contain_text("TronGrid not answering: told to wait")
    page.click("#order-steps button[data-action=cancel]")
    page.click("#order-steps button[data-confirm=cancel]")
    expect(page.locator("#order-facts [data-status]")).to_have_text("cancelled")


def test_forms__an_order_paid_in_part_meanwhile_is_not_cancelled_and_the_page_says_why(
    page: Page, stack: Stack
) -> None:
    headers, order = an_order(stack, "Half now")
    approved = HTTP.post(f"{stack.url}/v1/ad-orders/{order}/approve", headers=headers)
    assert approved.status_code == 200, approved.text
    sign_in(page, stack.url)
    persian(page)
    page.goto(f"{stack.url}/orders/{order}")
    page.click("#order-steps button[data-action=cancel]")
    # The advertiser pays part of it while the owner reads the page.
    with psycopg.connect(stack.database_url) as conn:
        conn.execute(
            "UPDATE ad_orders SET status = 'part_paid', paid_micros = 5000000 WHERE id = %s",
            (order,),
        )
    page.click("#order-steps button[data-confirm=cancel]")
    expect(page.locator("#message")).to_have_text(
        "این سفارش اکنون «بخشی پرداخت‌شده» است و دیگر لغو نمی‌شود."
    )
    page.reload()
    expect(page.locator("#order-facts [data-status]")).to_have_text("بخشی پرداخت‌شده")
    # The coins listed as Persian lists them, with its own comma.
    expect(page.locator("#order-facts")).to_contain_text("USDT\u060c")
    # An order paid in part offers no Cancel: billing would refuse it.
    expect(page.locator("#order-steps button[data-action=cancel]")).to_have_count(0)
    # What the advertiser was told (the approval), numbered in the page's digits.
    told = page.locator("#order-events")
    expect(told).to_be_visible()
    assert told.evaluate("list => getComputedStyle(list).listStyleType") == "persian"

    # On a phone, in both languages, neither the order's hash and address nor the invoices
    # push the page sideways.
    with psycopg.connect(stack.database_url) as conn:
        conn.execute(
            "INSERT INTO tron_claims (tx_hash, order_id, state) VALUES (%s, %s, 'credited')",
            ("cd" * 32, order),
        )
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{stack.url}/invoices")
    page.fill("#new-invoice input[name=telegram_user_id]", "4242")
    page.click("#new-invoice button[type=submit]")
    expect(page.locator("#invoices tbody tr").first).to_be_visible()
    for language in ("fa", "en"):
        page.select_option("#language", language)
        for path in (f"/orders/{order}", "/invoices"):
            page.goto(f"{stack.url}{path}")
            expect(page.locator("main h1, main h2").first).to_be_visible()
            wide = page.evaluate("document.documentElement.scrollWidth")
            assert wide <= 390, (language, path, wide)
        page.goto(f"{stack.url}/orders/{order}")
        hash_link = page.locator("#order-claims a.hash")
        expect(hash_link).to_have_text("cd" * 32)
        box = hash_link.bounding_box()
        assert box is not None and 0 <= box["x"] and box["x"] + box["width"] <= 390, box
        page.screenshot(path=str(ARTIFACTS / f"order-390-{language}.png"), full_page=True)
    expect(page.locator("#order-steps")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "order.png"), full_page=True)


def test_forms__people_found_by_id_in_persian_digits_and_memberships_by_channel(
    page: Page, panel: str, database_url: str
) -> None:
    assert seed_history(database_url) is True
    sign_in(page, panel)
    persian(page)
    page.click("#pages a[data-view=people]")
    page.fill("#people-q", "۷۰۰۰۰۱۲")
    page.click("form.search button[type=submit]")
    expect(page.locator("#people tbody tr")).to_have_count(1)
    expect(page.locator("#people tbody tr")).to_contain_text("@demo_12")
    assert page.url.endswith("/people?q=%DB%B7%DB%B0%DB%B0%DB%B0%DB%B0%DB%B1%DB%B2")
    page.click("#pages a[data-view=memberships]")
    page.select_option("select[data-filter=channel]", label="Demo paid channel")
    expect(page).to_have_url(re.compile(r"/memberships\?channel=[0-9]+$"))
    page.fill("#memberships-q", "@demo_7")
    page.click("form.search button[type=submit]")
    rows = page.locator("#memberships tbody tr")
    expect(rows.first).to_contain_text("@demo_7")
    for text in rows.all_inner_texts():
        assert "@demo_7" in text and "Demo paid channel" in text
    # The list as a file, with its filters: only the grace memberships of the channel.
    page.fill("#memberships-q", "")
    page.click("form.search button[type=submit]")
    page.select_option("select[data-filter=status]", "grace")
    expect(page).to_have_url(re.compile(r"status=grace"))
    shown = sorted(
        text.split("@demo_")[1].split()[0]
        for text in page.locator("#memberships tbody tr").all_inner_texts()
    )
    with page.expect_download() as started:
        page.click("#memberships-csv")
    download = started.value
    assert re.fullmatch(r"memberships-\d{4}-\d{2}-\d{2}\.csv", download.suggested_filename)
    with open(download.path(), encoding="utf-8-sig", newline="") as file:
        rows = list(csv.DictReader(file))
    assert rows and {(row["status"], row["channel_title"]) for row in rows} == {
        ("grace", "Demo paid channel")
    }
    assert sorted(row["username"].removeprefix("demo_") for row in rows) == shown


def test_forms__a_bot_paused_resumed_then_removed_after_asking_in_persian_on_a_phone(
    page: Page, stack: Stack
) -> None:
    _, token, _ = insert_bot(stack.database_url, 5550702, "polling")
    HTTP.post(f"{stack.sim}/_sim/bots", json={"token": token}).raise_for_status()
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, stack.url)
    persian(page)
    page.goto(f"{stack.url}/bots")
    row = page.locator("#bots tbody tr", has_text="bot5550702")
    expect(row).to_contain_text("فعال")
    row.locator("button[data-action=pause]").click()
    expect(row).to_contain_text("متوقف")
    row.locator("button[data-action=resume]").click()
    expect(row.locator("button[data-action=pause]")).to_be_visible()
    expect(row).to_contain_text("فعال")
    row.locator("button[data-action=remove]").click()
    # Asked first: keeping it changes nothing.
    row.locator("[role=group] button:not([data-confirm])").click()
    expect(row).to_contain_text("فعال")
    row.locator("button[data-action=remove]").click()
    row.locator("button[data-confirm=remove]").click()
    expect(row).to_contain_text("حذف‌شده")
    # Nothing is left to do with it; the other bot keeps its buttons.
    expect(row.locator("button")).to_have_count(0)
    other = page.locator("#bots tbody tr", has_text=f"bot{BOT}")
    expect(other.locator("button[data-action=pause]")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "bots-fa.png"), full_page=True)
    with psycopg.connect(stack.database_url) as conn:
        row_now = conn.execute(
            "SELECT status, removed_at IS NOT NULL FROM bots WHERE telegram_bot_id = 5550702"
        ).fetchone()
    assert row_now == ("removed", True)


def test_forms__a_campaign_started_with_its_link_refusals_at_the_field_then_its_own_page(
    page: Page, stack: Stack
) -> None:
    for chat, title, admins in (
        (-1001000000711, "Private room", [BOT]),
        (-1001000000712, "Aside", []),
    ):
        HTTP.post(
            f"{stack.sim}/_sim/chats",
            json={"id": chat, "type": "channel", "title": title, "admin_bots": admins},
        ).raise_for_status()
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, stack.url)
    persian(page)
    page.goto(f"{stack.url}/channels")
    for chat, title in (
        ("-1001000000711", "Private room"),
        ("-1001000000712", "Aside"),
        ("@sponsor_a", "Sponsor"),
    ):
        page.fill("#add-channel input[name=chat]", chat)
        page.click("#add-channel button[type=submit]")
        expect(page.locator("#add-channel-done")).to_contain_text(f"«{title}»")
    page.goto(f"{stack.url}/campaigns")
    form = page.locator("#add-campaign")
    form.locator("select[name=channel_id]").select_option(label="Private room")
    form.locator("input[name=name]").fill("x" * 33)
    form.locator("button[type=submit]").click()
    expect(form.locator("[data-problem=name]")).to_have_text("خیلی بلند است.")
    expect(form.locator("input[name=name]")).to_be_focused()
    # A channel where the bot is no admin: said at the bot, before any link exists.
    form.locator("select[name=channel_id]").select_option(label="Aside")
    form.locator("input[name=name]").fill("Spring sponsor")
    form.locator("button[type=submit]").click()
    expect(form.locator("[data-problem=bot_id]")).to_contain_text("مدیری کنید")
    form.locator("select[name=channel_id]").select_option(label="Private room")
    form.locator("button[type=submit]").click()
    expect(page.locator("#add-campaign-done")).to_contain_text("https://t.me/+")
    with psycopg.connect(stack.database_url) as conn:
        [(link,)] = conn.execute("SELECT invite_link FROM campaigns").fetchall()
    row = page.locator("#campaigns tbody tr", has_text="Spring sponsor")
    expect(row).to_contain_text(link)
    expect(row.locator("[data-warning]")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "campaigns-fa.png"), full_page=True)
    row.locator("a", has_text="Spring sponsor").click()
    expect(page.locator("main h2")).to_have_text("Spring sponsor")
    expect(page.locator("#campaign-facts")).to_contain_text(link)
    expect(page.locator("#campaign-facts [data-figure=joins]")).to_have_text("\u06f0")
    expect(page.locator("#campaign-days-summary")).to_contain_text("کسی")
    page.screenshot(path=str(ARTIFACTS / "campaign-fa.png"), full_page=True)

    # In English on a wide screen: a public channel's campaign carries the warning.
    page.set_viewport_size({"width": 1280, "height": 900})
    page.select_option("#language", "en")
    page.goto(f"{stack.url}/campaigns")
    form.locator("select[name=channel_id]").select_option(label="Sponsor")
    form.locator("input[name=name]").fill("Open call")
    form.locator("button[type=submit]").click()
    expect(page.locator("#add-campaign-done [data-warning=public]")).to_contain_text(
        "Public channel"
    )
    opened = page.locator("#campaigns tbody tr", has_text="Open call")
    expect(opened.locator("[data-warning=public]")).to_have_count(1)
    page.screenshot(path=str(ARTIFACTS / "campaigns-en.png"), full_page=True)


def test_forms__a_broadcast_tested_on_oneself_then_sent_and_watched_to_the_end(
    page: Page, stack: Stack, start_service: Callable[..., ServiceProcess]
) -> None:
    with psycopg.connect(stack.database_url) as conn:
        [(bot,)] = conn.execute("SELECT id FROM bots").fetchall()
        conn.execute(
            "WITH p AS (INSERT INTO people (telegram_user_id, first_name, username)"
            " SELECT u, 'P', CASE WHEN u = 7400001 THEN 'owner_me' END"
            " FROM generate_series(7400001, 7400012) u RETURNING id, telegram_user_id)"
            " INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at, blocked_at,"
            " started_at) SELECT %s, id, now(), now(),"
            " CASE WHEN telegram_user_id = 7400012 THEN now() END, now()"
            " FROM p",
            (bot,),
        )
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, stack.url)
    persian(page)
    page.goto(f"{stack.url}/broadcasts")
    form = page.locator("#add-broadcast")
    form.locator("textarea[name=text]").fill("Half price & more")
    form.locator("input[name=to]").fill("@owner_me")
    form.locator("button[type=submit]").click()
    expect(form.locator("[data-problem=text]")).not_to_be_empty()
    expect(form.locator("textarea[name=text]")).to_be_focused()
    form.locator("textarea[name=text]").fill("<b>Half price</b> &amp; more")
    form.locator("input[name=to]").fill("@somebody_else")
    form.locator("button[type=submit]").click()
    expect(form.locator("[data-problem=to]")).not_to_be_empty()
    form.locator("input[name=to]").fill("@owner_me")
    form.locator("button[type=submit]").click()
    tested = page.locator("#broadcast-tested")
    # Eleven of the twelve: one blocked the bot.
    expect(tested).to_contain_text("\u06f1\u06f1")
    sent = HTTP.get(f"{stack.sim}/_sim/sent", params={"chat_id": 7400001}).json()
    assert [m["text"] for m in sent] == ["<b>Half price</b> &amp; more"]
    page.screenshot(path=str(ARTIFACTS / "broadcasts-fa.png"), full_page=True)
    tested.locator("button[data-action=sendToAll]").click()
    tested.locator("button[data-confirm=sendToAll]").click()
    expect(page).to_have_url(re.compile(r"/broadcasts/\d+$"))
    expect(page.locator("#broadcast-facts")).to_contain_text("Half price")
    # No worker yet: it waits queued; then one starts and the page follows it to the end.
    expect(page.locator("#broadcast-progress [data-state]")).to_have_text("در صف")
    start_service(
        "botedge",
        "--role",
        "worker",
        env=service_env(stack.database_url, TELEGRAM_API_BASE=stack.sim, **FAST),
    )
    expect(page.locator("#broadcast-progress [data-state]")).to_have_text(
        "انجام‌شده", timeout=30_000
    )
    expect(page.locator("#broadcast-progress [data-figure=sent]")).to_have_text("\u06f1\u06f1")
    expect(page.locator("#broadcast-progress [data-figure=skipped]")).to_have_text("\u06f1")
    expect(page.locator("#cancel-broadcast")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "broadcast-fa.png"), full_page=True)

    # In English on a wide screen: the list with its progress; a queued one cancelled.
    page.set_viewport_size({"width": 1280, "height": 900})
    page.select_option("#language", "en")
    with psycopg.connect(stack.database_url) as conn:
        conn.execute("UPDATE bots SET status = 'paused'")
        [(queued,)] = conn.execute(
            "INSERT INTO broadcasts (bot_id, text) VALUES (%s, 'Later') RETURNING id", (bot,)
        ).fetchall()
    page.goto(f"{stack.url}/broadcasts/{queued}")
    page.click("#cancel-broadcast button[data-action=cancelBroadcast]")
    page.click("#cancel-broadcast button[data-confirm=cancelBroadcast]")
    expect(page.locator("#broadcast-progress [data-state]")).to_have_text("cancelled")
    page.goto(f"{stack.url}/broadcasts")
    row = page.locator("#broadcasts tbody tr", has_text="Half price")
    expect(row.locator("[data-figure=progress]")).to_have_text("11 of 11 sent")
    # The paused bot's broadcast was never taken up: nothing of it went.
    later = page.locator("#broadcasts tbody tr", has_text="Later")
    expect(later.locator("[data-figure=progress]")).to_have_text("0 of 0 sent")
    page.screenshot(path=str(ARTIFACTS / "broadcasts-en.png"), full_page=True)


def overlapping_labels(page: Page, selector: str) -> list[tuple[str, str]]:
    """Neighbouring axis labels whose drawn boxes touch."""
    boxes = page.locator(selector).evaluate_all(
        "labels => labels.map(l => { const r = l.getBoundingClientRect();"
        " return [l.textContent, r.left, r.right]; })"
    )
    ordered = sorted(boxes, key=lambda box: box[1])
    return [(a[0], b[0]) for a, b in itertools.pairwise(ordered) if a[2] > b[1]]


def test_forms__statistics_by_hour_a_refused_range_at_its_field_and_the_funnel(
    page: Page, stack: Stack
) -> None:
    with psycopg.connect(stack.database_url) as conn:
        [(bot,)] = conn.execute("SELECT id FROM bots").fetchall()
        for kind, n in (
            ("start", 9),
            ("gate_shown", 6),
            ("gate_passed", 3),
            ("content_delivered", 3),
        ):
            conn.execute(
                "INSERT INTO stat_events (at, kind, bot_id) SELECT now(), %s, %s"
                " FROM generate_series(1, %s)",
                (kind, bot, n),
            )
        conn.execute(
            "INSERT INTO stat_events (at, kind, bot_id, amount, currency)"
            " VALUES (now(), 'payment', %s, 990, 'USD')",
            (bot,),
        )
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, stack.url)
    persian(page)
    page.goto(f"{stack.url}/stats")
    expect(page.locator("#funnel [data-figure=start]")).to_have_text("\u06f9")
    # Each bar as long as its count against the longest: 9, 6, 3 and 3.
    widths = page.locator("#funnel .bar").evaluate_all(
        "bars => bars.map(bar => bar.getBoundingClientRect().width)"
    )
    assert [round(w / widths[0], 2) for w in widths] == [1.0, 0.67, 0.33, 0.33], widths
    # Half of those shown the gate passed it: the share in Persian digits, "٪" after them.
    expect(page.locator("#funnel [data-figure=gate_passed]")).to_have_text(
        "\u06f3 (\u06f5\u06f0\u066a)"
    )
    form = page.locator("#stats-range")
    # A range that ends before it starts: said at its first field, in Persian.
    form.locator("input[name=from-year]").fill("\u06f1\u06f4\u06f0\u06f6")
    form.locator("button[type=submit]").click()
    expect(form.locator("[data-problem=from]")).not_to_be_empty()
    page.goto(f"{stack.url}/stats")
    form.locator("select[name=granularity]").select_option("byHour")
    form.locator("button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"granularity=hour"))
    expect(page.locator("#stats-series polyline[data-series=start]")).to_have_count(1)
    assert overlapping_labels(page, "#stats-series text.day") == []
    page.screenshot(path=str(ARTIFACTS / "stats-fa.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    expect(page.locator("#stats-series polyline[data-series=start]")).to_have_count(1)
    assert overlapping_labels(page, "#stats-series text.day") == []
    page.set_viewport_size({"width": 1280, "height": 900})

    page.set_viewport_size({"width": 1280, "height": 900})
    page.select_option("#language", "en")
    page.goto(f"{stack.url}/stats")
    expect(page.locator("#stats-revenue [data-currency=USD]")).to_contain_text("9.90")
    with page.expect_download() as got:
        page.click("#stats-csv")
    lines = got.value.path().read_text(encoding="utf-8-sig").splitlines()
    assert lines[0].startswith("at,start,gate_shown")
    assert sum(int(line.split(",")[1]) for line in lines[1:]) == 9
    page.goto(f"{stack.url}/")
    expect(page.locator("#funnel [data-figure=content_delivered]")).to_have_text("3 (100%)")
    page.screenshot(path=str(ARTIFACTS / "stats-en.png"), full_page=True)


def test_forms__a_yearly_plan_refused_at_its_fields_made_default_a_trial_and_a_bundle_in_persian(
    page: Page, stack: Stack
) -> None:
    with psycopg.connect(stack.database_url) as conn:
        for chat, title, currency in (
            (-1001000000771, "Extra", "USD"),
            (-1001000000772, "Euro", "EUR"),
        ):
            conn.execute(
                "WITH c AS (INSERT INTO channels (telegram_chat_id, title, is_paid)"
                " VALUES (%s, %s, true) RETURNING id)"
                " INSERT INTO plans (channel_id, name, price_minor, currency, period_days,"
                " grace_days, is_default) SELECT id, 'Month', 500, %s, 30, 3, true FROM c",
                (chat, title, currency),
            )
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, stack.url)
    persian(page)
    page.goto(f"{stack.url}/plans")
    monthly = page.locator("#plans tbody tr", has_text="Monthly")
    expect(monthly.locator("[data-standing]")).to_have_text("پیش‌فرض")
    form = page.locator("#add-plan")
    form.locator("input[name=name]").fill("Yearly")
    form.locator("input[name=price]").fill("50.5")
    form.locator("input[name=currency]").fill("JPY")
    form.locator("input[name=period_days]").fill("۳۶۵")
    form.locator("button[type=submit]").click()
    # Yen have no fraction: said at the price, in Persian.
    expect(form.locator("[data-problem=price]")).to_have_text(
        "برای این ارز رقم‌های پس از ممیز زیاد است."
    )
    expect(form.locator("input[name=price]")).to_be_focused()
    form.locator("input[name=price]").fill("50")
    form.locator("input[name=currency]").fill("usd")
    form.locator("input[name=gateways][value=subgate]").check()
    form.locator("input[name=position]").fill("1")
    form.locator("button[type=submit]").click()
    expect(page.locator("#add-plan-done")).to_contain_text("Yearly")
    yearly = page.locator("#plans tbody tr", has_text="Yearly")
    expect(yearly).to_contain_text("Subgate")
    expect(yearly.locator("[data-standing]")).to_have_text("در فروش")

    # Renamed to a name the channel already sells: refused at the name.
    yearly.locator("button[data-action=edit]").click()
    editing = page.locator("#plans tr.editing form")
    editing.locator("input[name=name]").fill("monthly")
    editing.locator("button[type=submit]").click()
    expect(editing.locator("[data-problem=name]")).to_have_text("پیش‌تر به کار رفته است.")
    editing.locator("input[name=name]").fill("Yearly")
    # Typed on a Persian keyboard: Persian digits and the Arabic decimal separator.
    editing.locator("input[name=price]").fill("\u06f4\u06f5\u066b\u06f5\u06f0")
    editing.locator("button[type=submit]").click()
    expect(yearly).to_contain_text("\u06f4\u06f5\u066b\u06f5")
    with psycopg.connect(stack.database_url) as conn:
        assert conn.execute("SELECT price_minor FROM plans WHERE name = 'Yearly'").fetchall() == [
            (4550,)
        ]

    yearly.locator("button[data-action=makeDefault]").click()
    expect(yearly.locator("[data-standing]")).to_have_text("پیش‌فرض")
    # The old default can now be taken off sale, after asking.
    monthly.locator("button[data-action=stopSelling]").click()
    monthly.locator("button[data-confirm=stopSelling]").click()
    expect(monthly.locator("[data-standing]")).to_have_text("بیرون از فروش")
    expect(yearly.locator("button[data-action=stopSelling]")).to_have_count(0)

    # A free trial: no price, currency or gateways to fill.
    form.locator("select[name=kind]").select_option("trial")
    expect(form.locator("input[name=price]")).to_be_hidden()
    expect(form.locator("input[name=gateways]").first).to_be_hidden()
    form.locator("input[name=name]").fill("Free week")
    form.locator("input[name=period_days]").fill("\u06f7")
    form.locator("button[type=submit]").click()
    expect(page.locator("#add-plan-done")).to_contain_text("Free week")
    trial = page.locator("#plans tbody tr", has_text="Free week")
    expect(trial.locator("[data-kind]")).to_have_text("آزمایش رایگان")
    expect(trial).to_contain_text("رایگان")
    expect(trial.locator("button[data-action=makeDefault]")).to_have_count(0)

    # A bundle: its channels must sell in its currency, said at the channels in Persian.
    form.locator("select[name=kind]").select_option("bundle")
    expect(form.locator("input[name=price]")).to_be_visible()
    form.locator("input[name=name]").fill("All access")
    form.locator("input[name=price]").fill("8")
    form.locator("input[name=currency]").fill("USD")
    form.locator("input[name=period_days]").fill("30")
    form.locator("label", has_text="Euro").locator("input[name=channels]").check()
    form.locator("button[type=submit]").click()
    expect(form.locator("[data-problem=channels]")).to_have_text(
        "این کانال‌ها به ارزهای گوناگون می‌فروشند."  # noqa: RUF001
    )
    # The trial's "added" no longer stands beside this refusal.
    expect(page.locator("#add-plan-done")).to_have_count(0)
    form.locator("label", has_text="Euro").locator("input[name=channels]").uncheck()
    form.locator("label", has_text="Extra").locator("input[name=channels]").check()
    form.locator("button[type=submit]").click()
    expect(page.locator("#add-plan-done")).to_contain_text("All access")
    bundle = page.locator("#plans tbody tr", has_text="All access")
    expect(bundle.locator("[data-kind]")).to_have_text("بسته")
    expect(bundle.locator("a[href^='/channels/']")).to_have_count(2)
    expect(bundle).to_contain_text("Extra")
    expect(bundle.locator("button[data-action=makeDefault]")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "plans-fa.png"), full_page=True)
    with psycopg.connect(stack.database_url) as conn:
        plans = conn.execute(
            "SELECT name, kind, price_minor, gateways, position, active, is_default FROM plans"
            " ORDER BY id"
        ).fetchall()
    assert plans == [
        ("Monthly", "regular", 500, None, 0, False, False),
        ("Month", "regular", 500, None, 0, True, True),
        ("Month", "regular", 500, None, 0, True, True),
        ("Yearly", "regular", 4550, ["subgate"], 1, True, True),
        ("Free week", "trial", 0, None, 0, True, False),
        ("All access", "bundle", 800, None, 0, True, False),
    ]
    with psycopg.connect(stack.database_url) as conn:
        covered = conn.execute(
            "SELECT c.title FROM plan_channels pc JOIN channels c ON c.id = pc.channel_id"
            " JOIN plans p ON p.id = pc.plan_id WHERE p.name = 'All access' ORDER BY c.id"
        ).fetchall()
    assert len(covered) == 2 and ("Extra",) in covered


def test_forms__a_coupon_refused_at_its_field_then_used_and_its_uses_exported_on_a_phone(
    page: Page, stack: Stack
) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, stack.url)
    page.goto(f"{stack.url}/coupons")
    form = page.locator("#add-coupon")
    form.locator("input[name=code]").fill("Spring-20")
    form.locator("input[name=percent_off]").fill("120")
    form.locator("input[name=plan_ids]").first.check()
    form.locator("button[type=submit]").click()
    expect(form.locator("[data-problem=percent_off]")).to_have_text("Outside what is allowed.")
    expect(form.locator("input[name=percent_off]")).to_be_focused()
    form.locator("input[name=percent_off]").fill("20")
    form.locator("input[name=max_redemptions]").fill("5")
    form.locator("button[type=submit]").click()
    expect(page.locator("#add-coupon-done")).to_have_text("Coupon Spring-20 added.")
    row = page.locator("#coupons tbody tr", has_text="Spring-20")
    expect(row).to_contain_text("20%")
    expect(row).to_contain_text("0 / 5")

    # Someone pays with it from the bot: billing redeems it.
    with psycopg.connect(stack.database_url) as conn:
        [(channel, plan)] = conn.execute(
            "SELECT channel_id, id FROM plans WHERE is_default"
        ).fetchall()
    made = HTTP.post(
        f"{stack.billing}/internal/invoices",
        json={
            "telegram_user_id": 4242,
            "channel_id": channel,
            "gateway": "subgate",
            "plan_id": plan,
            "coupon": "SPRING-20",
        },
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
    )
    assert made.json()["amount"] == "4.00", made.text
    page.reload()
    expect(row).to_contain_text("1 / 5")
    row.locator("a[href^='/coupon-uses']").click()
    uses = page.locator("#coupon-uses tbody tr")
    expect(uses).to_have_count(1)
    expect(uses.first).to_contain_text("4242")
    expect(uses.first).to_contain_text("$1.00")
    with page.expect_download() as downloaded:
        page.click("#coupon-uses-csv")
    lines = Path(downloaded.value.path()).read_text(encoding="utf-8-sig").splitlines()
    assert lines[0].startswith("coupon_code,telegram_user_id")
    assert lines[1].startswith("Spring-20,4242,")
    page.screenshot(path=str(ARTIFACTS / "coupon-uses.png"), full_page=True)

    page.goto(f"{stack.url}/coupons")
    row.locator("button[data-action=deactivate]").click()
    row.locator("button[data-confirm=deactivate]").click()
    expect(row.locator("[data-standing]")).to_have_text("disabled")
    page.screenshot(path=str(ARTIFACTS / "coupons.png"), full_page=True)


def test_forms__access_codes_refused_at_a_field_then_made_used_and_exported_in_persian_on_a_phone(
    page: Page, stack: Stack
) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, stack.url)
    persian(page)
    page.goto(f"{stack.url}/access-codes")
    form = page.locator("#add-codes")
    form.locator("input[name=days]").fill("\u06f1\u06f4")
    form.locator("input[name=count]").fill("\u06f6\u06f0\u06f0")
    form.locator("button[type=submit]").click()
    expect(form.locator("[data-problem=count]")).to_have_text("بیرون از بازهٔ مجاز است.")
    form.locator("input[name=count]").fill("\u06f3")
    form.locator("input[name=label]").fill("Partners")
    form.locator("button[type=submit]").click()
    expect(page.locator("#add-codes-done")).to_have_text("\u06f3 کد ساخته شد.")
    rows = page.locator("#access-codes tbody tr")
    expect(rows).to_have_count(3)
    code = rows.first.locator("code").inner_text()
    assert re.fullmatch(r"[A-Z2-7]{12}", code), code

    # Someone sends it to the bot: billing redeems it.
    redeemed = HTTP.post(
        f"{stack.billing}/internal/access-codes/redeem",
        json={"telegram_user_id": 4343, "code": code},
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
    )
    assert redeemed.status_code == 200, redeemed.text
    page.reload()
    used = page.locator("#access-codes tbody tr", has_text=code)
    used.locator("a[href^='/access-code-uses']").click()
    uses = page.locator("#access-code-uses tbody tr")
    expect(uses).to_have_count(1)
    # The person's Telegram id in the page's digits.
    expect(uses.first).to_contain_text("\u06f4\u06f3\u06f4\u06f3")
    with page.expect_download() as downloaded:
        page.click("#access-code-uses-csv")
    lines = Path(downloaded.value.path()).read_text(encoding="utf-8-sig").splitlines()
    assert lines[1].startswith(f"{code},4343,")
    page.screenshot(path=str(ARTIFACTS / "access-code-uses-fa.png"), full_page=True)
    page.goto(f"{stack.url}/access-codes")
    page.screenshot(path=str(ARTIFACTS / "access-codes-fa.png"), full_page=True)


def test_forms__a_stars_payment_refunded_after_asking_in_persian_on_a_phone(
    page: Page, stack: Stack
) -> None:
    """The owner gives a subscriber's Stars back: asked first, then billing's request for
    botedge shows on the payment; a card payment has no such button."""
    with psycopg.connect(stack.database_url) as conn:
        bot = conn.execute("SELECT id FROM bots WHERE telegram_bot_id = %s", (BOT,)).fetchone()
        channel = conn.execute(
            "WITH c AS (INSERT INTO channels (telegram_chat_id, title, is_paid)"
            " VALUES (-1001000000799, 'Stars club', true) RETURNING id)"
            " INSERT INTO plans (channel_id, price_minor, currency, period_days, grace_days,"
            " is_default) SELECT id, 250, 'XTR', 30, 3, true FROM c RETURNING channel_id"
        ).fetchone()
    assert bot is not None and channel is not None
    made = HTTP.post(
        f"{stack.billing}/internal/invoices",
        json={"telegram_user_id": 4545, "channel_id": channel[0], "gateway": "telegram_stars"},
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
    ).json()
    with psycopg.connect(stack.database_url) as conn:
        conn.execute("UPDATE people SET first_name = 'Stella' WHERE telegram_user_id = 4545")
        conn.execute(
            "INSERT INTO telegram_payments (bot_id, person_id, invoice_payload, currency,"
            " total_amount, telegram_payment_charge_id, paid_at, received_at)"
            " SELECT %s, id, %s, 'XTR', 250, 'stx-refund-me', now(), now()"
            "   FROM people WHERE telegram_user_id = 4545",
            (bot[0], made["order_reference"]),
        )
        conn.execute("NOTIFY telegram_payments")
    # billing's Stars loop applies it.
    wait_until(lambda: made_payment(stack) > 0, 30, "the Stars payment applied")
    # And a card payment, through Subgate.
    card_channel = gateways.add_paid_channel(stack.database_url, chat_id=-1001000000797)
    order = gateways.create_invoice(HTTP, stack.billing, 4646, card_channel, "subgate")
    sent = gateways.subgate(order["order_reference"], "card-pay-1", "12.50")
    assert sent.send(HTTP, stack.billing).json()["applied"] is True
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, stack.url)
    persian(page)
    page.goto(f"{stack.url}/payments")
    row = page.locator("#payments tbody tr", has_text="Stella")
    expect(row).to_contain_text("۲۵۰ ⭐")
    # Each payment names its gateway as the plans do, not by its slug.
    card = page.locator("#payments tbody tr", has_text=order["order_reference"])
    expect(card).to_contain_text("Subgate")
    expect(card).not_to_contain_text("subgate")
    expect(card.locator("button[data-action=refundPayment]")).to_have_count(0)
    row.locator("button[data-action=refundPayment]").click()
    # Asked first: keeping it sends nothing.
    row.locator("[role=group] button:not([data-confirm])").click()
    expect(row.locator("button[data-action=refundPayment]")).to_be_visible()
    row.locator("button[data-action=refundPayment]").click()
    row.locator("button[data-confirm=refundPayment]").click()
    expect(row).to_contain_text("بازپرداخت از تلگرام خواسته شد")
    expect(row.locator("button[data-action=refundPayment]")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "payments-refund-fa.png"), full_page=True)
    with psycopg.connect(stack.database_url) as conn:
        asked = conn.execute(
            "SELECT telegram_payment_charge_id, requested_by, state FROM star_refund_requests"
        ).fetchall()
        audited = conn.execute(
            "SELECT action, target FROM audit_log WHERE action = 'payments.refund'"
        ).fetchall()
    assert asked == [("stx-refund-me", "owner@example.com", "pending")]
    assert audited == [("payments.refund", f"payment:{made_payment(stack)}")]
    # A plan sold in Stars says so, not "every gateway".
    page.goto(f"{stack.url}/plans")
    expect(page.locator("#plans tbody tr", has_text="Stars club")).to_contain_text("استارز تلگرام")


def made_payment(stack: Stack) -> int:
    """The Stars payment's id; 0 before there is one."""
    with psycopg.connect(stack.database_url) as conn:
        row = conn.execute("SELECT id FROM payments WHERE gateway = 'telegram_stars'").fetchone()
    return 0 if row is None else int(row[0])


def test_forms__reconcile_finds_a_planted_difference_and_the_owner_fixes_it_after_asking(
    page: Page, stack: Stack
) -> None:
    with psycopg.connect(stack.database_url) as conn:
        channel = conn.execute(
            "WITH c AS (INSERT INTO channels (telegram_chat_id, title, is_paid)"
            " VALUES (-1001000000798, 'Club', true) RETURNING id)"
            " INSERT INTO plans (channel_id, price_minor, currency, period_days, grace_days,"
            " is_default) SELECT id, 500, 'USD', 30, 3, true FROM c RETURNING channel_id"
        ).fetchone()
    assert channel is not None
    granted = HTTP.post(
        f"{stack.billing}/internal/grants",
        json={
            "telegram_user_id": 4646,
            "channel_id": channel[0],
            "until": "2031-01-01T00:00:00Z",
            "reason": "partner",
        },
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
    )
    assert granted.status_code == 200, granted.text
    removed, _, _ = insert_bot(stack.database_url, 5550798)
    with psycopg.connect(stack.database_url) as conn:
        # Planted: a year nobody granted.
        conn.execute("UPDATE memberships SET expires_at = '2032-01-01T00:00:00Z'")
        # A paid channel whose bot was removed: it cannot be asked, the rest still is.
        conn.execute(
            "UPDATE bots SET status = 'removed', removed_at = now() WHERE id = %s", (removed,)
        )
        conn.execute(
            "WITH c AS (INSERT INTO channels (telegram_chat_id, title, is_paid, manager_bot_id)"
            " VALUES (-1001000000797, 'Orphan', true, %s) RETURNING id),"
            " p AS (INSERT INTO people (telegram_user_id) VALUES (4747) RETURNING id)"
            " INSERT INTO channel_members (channel_id, person_id, status, is_member, updated_at)"
            " SELECT c.id, p.id, 'member', true, now() FROM c, p",
            (removed,),
        )
    sign_in(page, stack.url)
    page.goto(f"{stack.url}/reconcile")
    expect(page.locator("#reconcile-checked")).to_contain_text("1 memberships checked")
    orphan = page.locator("#reconcile-channels li.unchecked")
    expect(orphan).to_contain_text("Orphan not checked: the bot service cannot ask about it")
    row = page.locator("#reconcile tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("4646")
    expect(row).to_contain_text("2032")
    expect(row).to_contain_text("2031")
    page.screenshot(path=str(ARTIFACTS / "reconcile-en.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    persian(page)
    # The view drawn again in Persian before its button is pressed.
    expect(page.locator("#reconcile-checked")).to_contain_text("عضویت")
    page.locator("button[data-action=applyFixes]").click()
    page.locator("button[data-confirm=applyFixes]").click()
    expect(page.locator("#reconcile-clean")).to_contain_text("هر عضویت همان است")
    expect(orphan).to_contain_text("سنجیده نشد: سرویس ربات نمی‌تواند")
    page.screenshot(path=str(ARTIFACTS / "reconcile-fa.png"), full_page=True)
    with psycopg.connect(stack.database_url) as conn:
        history = conn.execute(
            "SELECT cause, new_expires_at FROM membership_events ORDER BY id"
        ).fetchall()
        audited = conn.execute(
            "SELECT count(*) FROM audit_log WHERE action = 'reconcile.fix'"
        ).fetchone()
    assert [cause for cause, _ in history] == ["grant", "reconcile"]
    assert history[-1][1].year == 2031
    assert audited == (1,)
