"""Paying from the bot end to end: the offer, a gateway button, the pay link, the simulated
checkout's Pay or Decline, billing's signed callback, the invite link, the join."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from botedge import billing_client, pay
from botedge.words import FSI, PDI
from tests.botedge.e2e.conftest import Edge
from tests.botedge.e2e.paying import BUYER, PAID, Store, open_store
from tests.conftest import HTTP, ServiceProcess, WrittenDown
from tests.scale import sized

WAITING = billing_client.WAITING.text
NOT_PAID = pay.NOT_PAID.text


@pytest.fixture
def store(edge: Edge, start_service: Callable[..., ServiceProcess], database_url: str) -> Store:
    return open_store(edge, start_service, database_url)


def test_pay__offer_link_checkout_pay_invite_link_joined(store: Store) -> None:
    edge = store.edge
    edge.start_worker()
    store.say(f"/start pay_{store.channel}")
    edge.wait_until(lambda: bool(store.sent()), 30, "the offer")
    [offer] = store.sent()
    assert offer["text"] == f"<b>{FSI}Paid{PDI}</b>: 12.50 UAH for 30 days.\nChoose how to pay:"
    [(payload,)] = edge.query("SELECT payload FROM outbox WHERE method = 'sendMessage'")
    markup = payload["reply_markup"]["inline_keyboard"]
    buttons = [b["callback_data"] for row in markup for b in row]
    assert buttons == [store.button(g) for g in ("stripe", "subgate", "wayforpay")]

    store.press(offer["message_id"], store.button("subgate"))
    edge.wait_until(lambda: bool(store.edits()), 30, "the pay link")
    [edit] = store.edits()
    assert edit["message_id"] == offer["message_id"]
    assert edit["text"].startswith(f"Pay <b>12.50 UAH</b> for <b>{FSI}Paid{PDI}</b> with Subgate.")
    [button], [coupon] = edit["reply_markup"]["inline_keyboard"]
    assert coupon["text"] == "I have a coupon"
    url = urlsplit(button["url"])
    assert button["url"].startswith(f"{store.checkout.url}/checkout/subgate/gh_")
    assert parse_qs(url.query) == {"amount": ["12.50"], "currency": ["UAH"]}

    # The buyer opens the link and presses Pay: the checkout signs billing's callback.
    shown = HTTP.get(button["url"])
    assert shown.status_code == 200 and "12.50 UAH" in shown.text
    done = HTTP.post(button["url"], data={"action": "pay", "amount": "12.50", "currency": "UAH"})
    assert done.status_code == 200 and "Paid." in done.text
    assert edge.query("SELECT outcome FROM gateway_events") == [("applied",)]
    edge.wait_until(lambda: len(store.sent()) == 2, 30, "the invite link")
    invite = store.sent()[1]
    assert f"access to {FSI}Paid{PDI} is open" in invite["text"]
    [(link,)] = edge.query("SELECT payload FROM outbox WHERE dedupe_key LIKE 'access:%%'")
    join_url = link["reply_markup"]["inline_keyboard"][0][0]["url"]
    edge.sim_post("/_sim/join", {"chat_id": PAID, "user_id": BUYER, "invite_link": join_url})
    edge.wait_until(
        lambda: edge.query("SELECT is_member FROM channel_members") == [(True,)], 30, "joined"
    )


def test_pay__a_plain_start_lists_what_the_bot_offers(store: Store) -> None:
    edge = store.edge
    edge.query(
        "INSERT INTO ad_slots (bot_id, kind, title, price_micros) SELECT id, 'pinned_post',"
        " 'Pinned', 1000000 FROM bots RETURNING id"
    )
    edge.start_worker()
    store.say("/start")
    edge.wait_until(lambda: bool(store.sent()), 30, "the welcome")
    [welcome] = store.sent()
    assert welcome["text"].splitlines() == [
        "Welcome! Here is what I can do:",
        "• Open a content link you were given, and I send you the content.",
        "• Join a paid channel: press it below to see its price and pay.",
        "• /link: your invite link again, once you have paid.",
        "• /ads: advertise here, paid in USDT or TRX.",
        "• /language: choose the language I write in.",
    ]
    [(payload,)] = edge.query("SELECT payload FROM outbox WHERE method = 'sendMessage'")
    [[button]] = payload["reply_markup"]["inline_keyboard"]
    username = edge.query("SELECT username FROM bots")[0][0]
    assert button == {"text": "Paid", "url": f"https://t.me/{username}?start=pay_{store.channel}"}


@pytest.mark.parametrize("gateway", ["wayforpay", "stripe"])
def test_pay__declined_at_the_checkout_grants_nothing_and_the_chat_offers_a_retry(
    store: Store, gateway: str
) -> None:
    edge = store.edge
    edge.start_worker()
    url = store.pay_link(gateway)
    declined = HTTP.post(url, data={"action": "decline", "amount": "12.50", "currency": "UAH"})
    assert declined.status_code == 200
    assert "The payment was declined" in declined.text
    assert edge.query("SELECT gateway, outcome FROM gateway_events") == [(gateway, "not_success")]
    assert edge.query("SELECT count(*) FROM memberships") == [(0,)]
    assert edge.query("SELECT kind FROM access_events") == [("checkout_declined",)]

    def told() -> list[dict[str, Any]]:
        return [m for m in store.sent() if "did not go through" in str(m["text"])]

    edge.wait_until(lambda: bool(told()), 30, "the decline told in the chat")
    [message] = [
        m
        for m in edge.sim_get(f"/_sim/chats/{BUYER}/messages")
        if "did not go through" in str(m.get("text"))
    ]
    [[button]] = message["reply_markup"]["inline_keyboard"]
    assert button["text"] == "Try again" and button["url"].endswith(f"?start=pay_{store.channel}")


def test_pay__a_channel_that_is_not_paid_is_said_plainly(store: Store) -> None:
    edge = store.edge
    edge.start_worker()
    [(free,)] = edge.query(
        "INSERT INTO channels (telegram_chat_id, title) VALUES (-1001000000599, 'Free')"
        " RETURNING id"
    )
    store.say(f"/start pay_{free}")
    edge.wait_until(lambda: bool(store.sent()), 30, "the answer")
    assert store.sent()[0]["text"] == NOT_PAID
    assert "reply_markup" not in edge.query("SELECT payload FROM outbox")[0][0]
    assert edge.query("SELECT count(*) FROM invoices") == [(0,)]


def test_pay__a_gateway_turned_off_is_said_and_makes_no_invoice(store: Store) -> None:
    edge = store.edge
    edge.start_worker()
    store.say(f"/start pay_{store.channel}")
    edge.wait_until(lambda: bool(store.sent()), 30, "the offer")
    # The owner turns WayForPay off after the offer was shown; its button is pressed.
    store.restart_billing("WAYFORPAY_MERCHANT_ACCOUNT", "WAYFORPAY_SECRET_KEY")
    store.press(store.sent()[0]["message_id"], store.button("wayforpay"))
    edge.wait_until(lambda: bool(store.edits()), 30, "the offer again")
    answers = edge.query(
        "SELECT payload FROM outbox WHERE method = 'answerCallbackQuery' AND state = 'sent'"
    )
    assert answers[0][0]["text"] == "That way to pay is not available any more."
    [edit] = store.edits()
    assert edit["text"].endswith("Choose how to pay:")
    assert [row[0]["callback_data"] for row in edit["reply_markup"]["inline_keyboard"]] == [
        store.button("stripe"),
        store.button("subgate"),
    ]
    assert edge.query("SELECT count(*) FROM invoices") == [(0,)]


def test_pay__billing_unreachable_told_once_we_are_on_it_then_the_offer(store: Store) -> None:
    edge = store.edge
    edge.start_worker()
    store.billing.proc.kill()
    store.billing.proc.wait()
    store.say(f"/start pay_{store.channel}")
    edge.wait_until(
        lambda: edge.query("SELECT coalesce(max(attempt), 0) FROM inbox")[0][0] >= 3, 30, "retries"
    )
    edge.wait_until(lambda: bool(store.sent()), 30, "the notice")
    assert [m["text"] for m in store.sent()] == [WAITING]
    store.restart_billing()
    edge.wait_until(lambda: len(store.sent()) == 2, 60, "the offer once billing is back")
    assert store.sent()[1]["text"].startswith(f"<b>{FSI}Paid{PDI}</b>: 12.50 UAH")
    assert edge.query("SELECT state, told_waiting FROM inbox") == [("done", True)]
    assert store.sent()[0]["text"] == WAITING


@pytest.mark.slow(40)
@pytest.mark.scaled
def test_pay__billing_down_while_people_press_pay__on_it_once_then_one_pay_link_each(
    store: Store, written_down: WrittenDown
) -> None:
    people = range(BUYER, BUYER + sized(12, 50))
    outage = sized(8.0, 120.0)
    edge = store.edge
    worker = edge.start_worker()
    for person in people:
        store.say(f"/start pay_{store.channel}", person)
    edge.wait_until(lambda: all(store.sent(p) for p in people), 60, "every offer")
    offers = {p: store.sent(p)[0]["message_id"] for p in people}

    store.billing.proc.kill()
    store.billing.proc.wait()
    down_at = time.monotonic()
    for person in people:
        store.press(offers[person], store.button("subgate"), person)

    def texts(person: int) -> list[str]:
        return [str(m["text"]) for m in store.sent(person)]

    edge.wait_until(lambda: all(WAITING in texts(p) for p in people), 60, "everyone told")
    breakers = HTTP.get(f"{worker.url}/readyz", timeout=10).json()["breakers"]
    assert [b["state"] for name, b in breakers.items() if name.startswith("billing ")] in (
        ["open"],
        ["half-open"],
    )
    # The outage runs its length with every press waiting; then billing is back.
    time.sleep(max(0.0, outage - (time.monotonic() - down_at)))
    assert all(texts(p) == [texts(p)[0], WAITING] for p in people)
    down_for = time.monotonic() - down_at
    store.restart_billing()
    back_at = time.monotonic()

    def linked(person: int) -> list[str]:
        return [t for t in texts(person) if t.startswith("Pay <b>12.50 UAH</b>")]

    edge.wait_until(lambda: all(linked(p) for p in people), 180, "every pay link")
    links_after = time.monotonic() - back_at
    edge.wait_until(
        lambda: edge.query("SELECT count(*) FROM inbox WHERE state <> 'done'") == [(0,)],
        30,
        "every press done",
    )
    for person in people:
        assert texts(person)[1:] == [WAITING, linked(person)[0]], person
    # One invoice a press however often it was retried, and no message edited after the notice.
    invoices = edge.query(
        "SELECT p.telegram_user_id, count(*) FROM invoices i JOIN people p ON p.id = i.person_id"
        " GROUP BY 1"
    )
    assert sorted(invoices) == [(p, 1) for p in people]
    assert store.edits() == []
    retried = edge.query("SELECT count(*) FROM inbox WHERE attempt > 1 OR told_waiting")
    assert retried == [(len(people),)]
    written_down(
        "Billing down while visitors press pay",
        f"billing SIGKILLed for {down_for:.0f} s, then started again",
        f"{len(people)} people press a pay button right after billing went down",
        {
            'people told "we are on it" once': len(people),
            "people sent one pay link": len(people),
            "invoices made": len(invoices),
            "messages edited after the notice": 0,
            "lost": 0,
            "every pay link out after billing started again": f"{links_after:.1f} s",
        },
    )
