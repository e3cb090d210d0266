"""The panel's forms for money, in English and Persian: plans with trials and bundles, coupons,
access codes, Stars refunds and reconciliation."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
from playwright.sync_api import Page, expect

from tests.billing.e2e import gateways
from tests.botedge.conftest import insert_bot
from tests.conftest import (
    HTTP,
    SECRETS,
    wait_until,
)
from tests.panel_api.browser.conftest import (
    ARTIFACTS,
    BOT,
    Stack,
    open_form,
    persian,
    sign_in,
)


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
    open_form(page, "add-plan")
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
    open_form(page, "add-plan")
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
    open_form(page, "add-plan")
    form.locator("select[name=kind]").select_option("bundle")
    expect(form.locator("input[name=price]")).to_be_visible()
    form.locator("input[name=name]").fill("All access")
    form.locator("input[name=price]").fill("8")
    form.locator("input[name=currency]").fill("USD")
    form.locator("input[name=period_days]").fill("30")
    form.locator("label", has_text="Euro").locator("input[name=channels]").check()
    form.locator("button[type=submit]").click()
    expect(form.locator("[data-problem=channels]")).to_have_text(
        "این کانال‌ها به ارزهای گوناگون می‌فروشند."
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
    open_form(page, "add-coupon")
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
    open_form(page, "add-codes")
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
