"""The panel's forms for advertising and reach, in English and Persian: slots and ad orders,
campaigns, broadcasts and statistics."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable

import psycopg
from playwright.sync_api import Page, expect

from tests.botedge.e2e.conftest import FAST
from tests.conftest import (
    HTTP,
    ServiceProcess,
    service_env,
)
from tests.panel_api.browser.conftest import (
    ARTIFACTS,
    BOT,
    PASSWORD,
    Stack,
    open_form,
    persian,
    sign_in,
)
from tests.panel_api.e2e.conftest import SHOP
from tests.panel_api.e2e.conftest import sign_in as api_sign_in


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
    open_form(page, "new-invoice")
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
        open_form(page, "add-channel")
        page.fill("#add-channel input[name=chat]", chat)
        page.click("#add-channel button[type=submit]")
        expect(page.locator("#add-channel-done")).to_contain_text(f"«{title}»")
    page.goto(f"{stack.url}/campaigns")
    open_form(page, "add-campaign")
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
    open_form(page, "add-campaign")
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
    open_form(page, "add-broadcast")
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
