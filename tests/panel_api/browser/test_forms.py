"""Every form of the panel as an owner uses it, in English and Persian: a write that goes
through says so where it was made, a refused one shows each problem at its field in the page's
language, and a destructive one asks first. Here: channels and plans, content and gates, the
team, invoices and grants, people, bots."""

from __future__ import annotations

import csv
import re
from datetime import date

import psycopg
from playwright.sync_api import Page, expect

from tests.botedge.conftest import insert_bot
from tests.conftest import (
    HTTP,
)
from tests.panel_api.browser.conftest import (
    ARTIFACTS,
    BOT,
    FA_DIGITS,
    PASSWORD,
    SPONSOR,
    Stack,
    open_form,
    persian,
    sign_in,
)
from tests.panel_api.e2e.conftest import sign_in as api_sign_in
from tests.panel_api.history import seed_history


def test_forms__a_channel_found_then_sold_by_its_plan_with_refusals_at_the_field_in_persian(
    page: Page, stack: Stack
) -> None:
    sign_in(page, stack.url)
    persian(page)
    page.click("#pages a[data-view=channels]")
    open_form(page, "add-channel")
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
    open_form(page, "add-content")
    # A file's body is its caption: counted as Telegram counts (an emoji is two) against 1,024,
    # marked past it and refused at the box; a text has 4,096.
    page.select_option("#add-content select[name=kind]", "file")
    page.fill("#add-content input[name=file_id]", "AgAD")
    page.fill("#add-content input[name=code]", "long_caption")
    page.fill("#add-content textarea[name=body]", "😀" * 512 + "x")
    length = page.locator("#add-content [data-length=body]")
    expect(length).to_have_text("1,025 of 1,024 characters, as Telegram counts them")
    expect(length).to_have_attribute("data-over", "")
    page.click("#add-content button[type=submit]")
    expect(page.locator("#add-content [data-problem=body]")).to_have_text("Too long.")
    page.select_option("#add-content select[name=kind]", "text")
    expect(length).to_have_text("1,025 of 4,096 characters, as Telegram counts them")
    expect(length).not_to_have_attribute("data-over", "")
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
    open_form(page, "invite")
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
    open_form(page, "new-invoice")
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
