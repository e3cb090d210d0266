"""Paying from the bot end to end: the offer, a gateway button, the pay link, the simulated
checkout's Pay or Decline, billing's signed callback, the invite link, the join."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from botedge.billing_client import WAITING
from botedge.pay import NOT_PAID
from tests.billing.e2e import gateways
from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP, ServiceProcess, WrittenDown, free_port, service_env
from tests.scale import sized

PAID = -1001000000501
BOT = 5550501
BUYER = 7301


@dataclass
class Store:
    edge: Edge
    checkout: ServiceProcess
    channel: int
    billing: ServiceProcess
    start: Callable[..., ServiceProcess]

    def button(self, gateway: str) -> str:
        """A gateway's button for the channel's one plan."""
        [(plan,)] = self.edge.query("SELECT id FROM plans WHERE channel_id = %s", self.channel)
        return f"pay:{self.channel}:{gateway}:{plan}"

    def restart_billing(self, *without: str) -> None:
        if self.billing.proc.poll() is None:
            self.billing.proc.kill()
            self.billing.proc.wait()
        port = int(self.billing.url.rsplit(":", 1)[1])
        env = {k: v for k, v in self.billing_env().items() if k not in without}
        self.billing = self.start("billing", env=env, port=port)

    def billing_env(self) -> dict[str, str]:
        return service_env(self.edge.database_url, **checkout_env(self.checkout.url))

    def say(self, text: str, user: int = BUYER) -> None:
        self.edge.sim_post("/_sim/messages", {"bot_id": BOT, "user_id": user, "text": text})

    def sent(self, user: int = BUYER) -> list[dict[str, Any]]:
        return list(self.edge.sim_get("/_sim/sent", chat_id=user))

    def press(self, message_id: int, data: str, user: int = BUYER) -> None:
        self.edge.sim_post(
            "/_sim/press",
            {"bot_id": BOT, "user_id": user, "message_id": message_id, "data": data},
        )

    def edits(self) -> list[dict[str, Any]]:
        rows = self.edge.query(
            "SELECT payload FROM outbox WHERE method = 'editMessageText' AND state = 'sent'"
            " ORDER BY id"
        )
        return [row[0] for row in rows]

    def pay_link(self, gateway: str) -> str:
        """/start pay_<id>, the gateway's button, the link the message is edited to."""
        self.say(f"/start pay_{self.channel}")
        self.edge.wait_until(lambda: bool(self.sent()), 30, "the offer")
        offer = self.sent()[-1]
        self.press(offer["message_id"], self.button(gateway))
        self.edge.wait_until(lambda: bool(self.edits()), 30, "the pay link")
        [pay], _coupon = self.edits()[-1]["reply_markup"]["inline_keyboard"]
        return str(pay["url"])


def checkout_env(checkout: str) -> dict[str, str]:
    return {
        f"{gateway.upper()}_PAY_URL": (
            f"{checkout}/checkout/{gateway}/{{order_reference}}"
            "?amount={amount}&currency={currency}"
        )
        for gateway in ("subgate", "wayforpay", "stripe")
    }


@pytest.fixture
def store(edge: Edge, start_service: Callable[..., ServiceProcess], database_url: str) -> Store:
    billing_port = free_port()
    billing_url = f"http://127.0.0.1:{billing_port}"
    checkout = start_service(
        "simulators.checkout", env=service_env(database_url, BILLING_URL=billing_url)
    )
    billing = start_service(
        "billing",
        env=service_env(database_url, **checkout_env(checkout.url)),
        port=billing_port,
    )
    edge.extra_env["BILLING_URL"] = billing_url
    bot_id, _, _ = edge.add_bot(BOT, mode="polling")
    channel = gateways.add_paid_channel(database_url, chat_id=PAID, currency="UAH")
    edge.query("UPDATE channels SET manager_bot_id = %s RETURNING id", bot_id)
    edge.sim_post(
        "/_sim/chats", {"id": PAID, "type": "channel", "title": "Paid", "admin_bots": [BOT]}
    )
    return Store(edge, checkout, channel, billing, start_service)


def test_pay__offer_link_checkout_pay_invite_link_joined(store: Store) -> None:
    edge = store.edge
    edge.start_worker()
    store.say(f"/start pay_{store.channel}")
    edge.wait_until(lambda: bool(store.sent()), 30, "the offer")
    [offer] = store.sent()
    assert offer["text"] == "<b>Paid</b>: 12.50 UAH for 30 days.\nChoose how to pay:"
    [(payload,)] = edge.query("SELECT payload FROM outbox WHERE method = 'sendMessage'")
    markup = payload["reply_markup"]["inline_keyboard"]
    buttons = [b["callback_data"] for row in markup for b in row]
    assert buttons == [store.button(g) for g in ("stripe", "subgate", "wayforpay")]

    store.press(offer["message_id"], store.button("subgate"))
    edge.wait_until(lambda: bool(store.edits()), 30, "the pay link")
    [edit] = store.edits()
    assert edit["message_id"] == offer["message_id"]
    assert edit["text"].startswith("Pay <b>12.50 UAH</b> for <b>Paid</b> with Subgate.")
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
    assert "access to Paid is open" in invite["text"]
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
    assert store.sent()[1]["text"].startswith("<b>Paid</b>: 12.50 UAH")
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


def test_pay__several_plans_one_chosen_back_then_another_and_one_taken_off_sale(
    store: Store,
) -> None:
    edge = store.edge
    [(year,)] = edge.query(
        "INSERT INTO plans (channel_id, name, price_minor, currency, period_days, grace_days,"
        " gateways, position) VALUES (%s, 'Year', 12000, 'UAH', 365, 3, '{subgate}', 1)"
        " RETURNING id",
        store.channel,
    )
    [(default,)] = edge.query(
        "UPDATE plans SET name = 'Month' WHERE channel_id = %s AND is_default RETURNING id",
        store.channel,
    )
    edge.start_worker()
    store.say(f"/start pay_{store.channel}")
    edge.wait_until(lambda: bool(store.sent()), 30, "the plans")
    [offer] = store.sent()
    assert offer["text"] == "<b>Paid</b>\nChoose a plan:"
    [(payload,)] = edge.query("SELECT payload FROM outbox WHERE method = 'sendMessage'")
    rows = payload["reply_markup"]["inline_keyboard"]
    assert [row[0]["callback_data"] for row in rows] == [
        f"plan:{store.channel}:{default}",
        f"plan:{store.channel}:{year}",
    ]
    assert rows[1][0]["text"] == "Year: 120.00 UAH for 365 days"

    def shown(count: int) -> dict[str, Any]:
        edge.wait_until(lambda: len(store.edits()) >= count, 30, f"edit {count}")
        return store.edits()[count - 1]

    store.press(offer["message_id"], f"plan:{store.channel}:{year}")
    chosen = shown(1)
    assert chosen["text"] == "<b>Paid</b> (Year): 120.00 UAH for 365 days.\nChoose how to pay:"
    assert [row[0]["callback_data"] for row in chosen["reply_markup"]["inline_keyboard"]] == [
        f"pay:{store.channel}:subgate:{year}",
        f"plan:{store.channel}",
    ]
    store.press(offer["message_id"], f"plan:{store.channel}")
    assert shown(2)["text"] == "<b>Paid</b>\nChoose a plan:"
    store.press(offer["message_id"], f"plan:{store.channel}:{year}")
    shown(3)
    store.press(offer["message_id"], f"pay:{store.channel}:subgate:{year}")
    invoice = shown(4)
    assert invoice["text"].startswith("Pay <b>120.00 UAH</b> for <b>Paid</b> (Year) with Subgate.")
    assert edge.query("SELECT plan_id, amount_minor, period_days FROM invoices") == [
        (year, 12000, 365)
    ]

    # The owner stops selling the year while someone still has its button.
    store.say(f"/start pay_{store.channel}", user=BUYER + 1)
    edge.wait_until(lambda: bool(store.sent(BUYER + 1)), 30, "the plans again")
    again = store.sent(BUYER + 1)[0]
    store.press(again["message_id"], f"plan:{store.channel}:{year}", user=BUYER + 1)
    shown(5)
    edge.query("UPDATE plans SET active = false WHERE id = %s RETURNING id", year)
    store.press(again["message_id"], f"pay:{store.channel}:subgate:{year}", user=BUYER + 1)
    refused = shown(6)
    edge.wait_until(
        lambda: any(
            a[0].get("text") == "That plan is not on sale any more."
            for a in edge.query(
                "SELECT payload FROM outbox WHERE method = 'answerCallbackQuery' AND state = 'sent'"
            )
        ),
        30,
        "the refusal",
    )
    # One plan left: its gateways straight away.
    assert refused["text"] == "<b>Paid</b>: 12.50 UAH for 30 days.\nChoose how to pay:"
    assert edge.query("SELECT count(*) FROM invoices") == [(1,)]


def test_pay__a_coupon_typed_under_the_pay_link_makes_a_discounted_one_that_is_paid(
    store: Store,
) -> None:
    edge = store.edge
    edge.query(
        "INSERT INTO coupons (code, percent_off, created_at) VALUES ('Spring', 20, now())"
        " RETURNING id"
    )
    edge.start_worker()
    store.pay_link("subgate")
    [plan] = store.button("subgate").rsplit(":", 1)[1:]
    [edit] = store.edits()
    assert [row[0].get("callback_data") for row in edit["reply_markup"]["inline_keyboard"]] == [
        None,
        f"coupon:{store.channel}:subgate:{plan}",
    ]

    def said(count: int) -> str:
        edge.wait_until(lambda: len(store.sent()) >= count, 30, f"message {count}")
        return str(store.sent()[count - 1]["text"])

    # Pressed, then thought better of it: nothing waits for a code any more.
    store.press(edit["message_id"], f"coupon:{store.channel}:subgate:{plan}")
    assert said(2) == "Send your coupon code as a message."
    store.press(store.sent()[1]["message_id"], "coupon:cancel")
    assert said(3).startswith("No coupon, then")
    assert edge.query("SELECT count(*) FROM conversations") == [(0,)]
    store.say("spring")
    assert said(4).startswith('I did not understand "spring"')

    store.press(edit["message_id"], f"coupon:{store.channel}:subgate:{plan}")
    said(5)
    store.say("20% off")
    assert said(6).startswith("That does not look like a coupon code")
    store.say("AUTUMN")
    assert said(7) == (
        "That coupon cannot be used: no coupon by that code. Send another code, or Cancel."
    )
    store.say("spring")
    assert said(8).startswith(
        "Pay <b>10.00 UAH</b> instead of 12.50 UAH, with coupon <code>SPRING</code>, for"
        " <b>Paid</b> with Subgate."
    )
    assert edge.query("SELECT count(*) FROM conversations") == [(0,)]
    [(payload,)] = edge.query(
        "SELECT payload FROM outbox WHERE payload->>'text' LIKE %s", "%instead of%"
    )
    [[button]] = payload["reply_markup"]["inline_keyboard"]
    assert button["text"] == "Pay 10.00 UAH"
    assert edge.query(
        "SELECT amount_minor, list_price_minor, discount_minor FROM invoices ORDER BY id"
    ) == [(1250, None, 0), (1000, 1250, 250)]

    done = HTTP.post(button["url"], data={"action": "pay", "amount": "10.00", "currency": "UAH"})
    assert done.status_code == 200 and "Paid." in done.text
    assert edge.query("SELECT outcome FROM gateway_events") == [("applied",)]
    assert edge.query(
        "SELECT c.code, i.status FROM coupon_redemptions r JOIN coupons c ON c.id = r.coupon_id"
        " JOIN invoices i ON i.id = r.invoice_id WHERE r.released_at IS NULL"
    ) == [("Spring", "paid")]
    assert "access to Paid is open" in said(9)


def test_pay__a_coupon_shaped_like_an_access_code_is_taken_as_a_coupon_after_i_have_one(
    store: Store,
) -> None:
    """BLACKFRIDAY25 has the shape of an access code (10-32 of A-Z and 2-7, a letter and a
    digit): the step the person is in, not the shape, says what it is."""
    edge = store.edge
    edge.query(
        "INSERT INTO coupons (code, percent_off, created_at) VALUES ('BLACKFRIDAY25', 20, now())"
        " RETURNING id"
    )
    edge.start_worker()
    store.pay_link("subgate")
    [plan] = store.button("subgate").rsplit(":", 1)[1:]
    [edit] = store.edits()
    store.press(edit["message_id"], f"coupon:{store.channel}:subgate:{plan}")
    edge.wait_until(lambda: len(store.sent()) >= 2, 30, "the ask for a code")
    store.say("BLACKFRIDAY25")
    edge.wait_until(lambda: len(store.sent()) >= 3, 30, "the answer to the code")
    assert str(store.sent()[2]["text"]).startswith(
        "Pay <b>10.00 UAH</b> instead of 12.50 UAH, with coupon <code>BLACKFRIDAY25</code>"
    )
    # Nothing was tried as an access code: no miss counted against the person.
    assert edge.query("SELECT count(*) FROM access_code_misses") == [(0,)]


def test_pay__a_free_trial_taken_from_the_plans_brings_the_invite_and_not_twice(
    store: Store,
) -> None:
    edge = store.edge
    [(trial,)] = edge.query(
        "INSERT INTO plans (channel_id, name, kind, price_minor, currency, period_days,"
        " grace_days, position) VALUES (%s, 'Free week', 'trial', 0, 'UAH', 7, 1, 1)"
        " RETURNING id",
        store.channel,
    )
    edge.start_worker()
    store.say(f"/start pay_{store.channel}")
    edge.wait_until(lambda: bool(store.sent()), 30, "the plans")
    offer = store.sent()[0]
    [(payload,)] = edge.query("SELECT payload FROM outbox WHERE method = 'sendMessage'")
    rows = payload["reply_markup"]["inline_keyboard"]
    assert rows[1][0] == {
        "text": "Free week: free for 7 days, once",
        "callback_data": f"plan:{store.channel}:{trial}",
    }

    def shown(count: int) -> dict[str, Any]:
        edge.wait_until(lambda: len(store.edits()) >= count, 30, f"edit {count}")
        return store.edits()[count - 1]

    store.press(offer["message_id"], f"plan:{store.channel}:{trial}")
    chosen = shown(1)
    assert chosen["text"] == "<b>Paid</b> (Free week): free for 7 days, once."
    assert [row[0]["callback_data"] for row in chosen["reply_markup"]["inline_keyboard"]] == [
        f"trial:{store.channel}:{trial}",
        f"plan:{store.channel}",
    ]
    store.press(offer["message_id"], f"trial:{store.channel}:{trial}")
    assert shown(2)["text"].startswith("Your free trial of <b>Paid</b> has started: 7 days.")
    edge.wait_until(
        lambda: any("access to Paid is open" in str(m["text"]) for m in store.sent()),
        30,
        "the invite link",
    )
    assert edge.query("SELECT cause, reason FROM membership_events") == [("trial", "Free week")]

    # Again from the start: said plainly, nothing more written.
    store.say(f"/start pay_{store.channel}")
    edge.wait_until(lambda: len(store.sent()) == 3, 30, "the plans again")
    again = store.sent()[2]
    store.press(again["message_id"], f"plan:{store.channel}:{trial}")
    shown(3)
    store.press(again["message_id"], f"trial:{store.channel}:{trial}")
    assert shown(4)["text"] == "No free trial: you have had this channel's free trial already."
    assert edge.query("SELECT count(*) FROM membership_events") == [(1,)]


def test_pay__an_access_code_sent_by_two_people_at_once_admits_one(store: Store) -> None:
    edge = store.edge
    edge.query(
        "INSERT INTO access_codes (code, channel_id, days, created_at)"
        " VALUES ('K7QW2MZP4XRT', %s, 14, now()), ('B3NV5TJW6LQA', %s, 7, now()) RETURNING id",
        store.channel,
        store.channel,
    )
    edge.start_worker()
    # Two people send the single-use code at once; a third opens its start link after.
    store.say("k7qw2mzp4xrt", user=BUYER)
    store.say("K7QW2MZP4XRT", user=BUYER + 1)

    def last(user: int) -> str:
        edge.wait_until(lambda: bool(store.sent(user)), 30, f"an answer to {user}")
        return str(store.sent(user)[0]["text"])

    answers = sorted([last(BUYER), last(BUYER + 1)])
    assert answers[0].startswith("That code is unknown, used up or expired.")
    assert answers[1].startswith("Your code gives you 14 days of <b>Paid</b>: access until")
    assert edge.query("SELECT count(*), min(reason) FROM membership_events") == [(1, "access_code")]
    store.say("/start code_B3NV5TJW6LQA", user=BUYER + 2)
    assert last(BUYER + 2).startswith("Your code gives you 7 days of <b>Paid</b>")
    edge.wait_until(
        lambda: any("access to Paid is open" in str(m["text"]) for m in store.sent(BUYER + 2)),
        30,
        "the invite link",
    )
    # A long word is not taken for a code.
    store.say("thankyouverymuch", user=BUYER + 3)
    assert last(BUYER + 3).startswith('I did not understand "thankyouverymuch"')


def test_pay__a_bundle_chosen_in_one_channel_paid_once_brings_an_invite_to_each(
    store: Store,
) -> None:
    edge = store.edge
    extra_chat = PAID - 1
    extra = gateways.add_paid_channel(edge.database_url, chat_id=extra_chat, currency="UAH")
    edge.query(
        "UPDATE channels SET title = 'Extra', manager_bot_id = (SELECT manager_bot_id FROM"
        " channels WHERE id = %s) WHERE id = %s RETURNING id",
        store.channel,
        extra,
    )
    edge.sim_post(
        "/_sim/chats", {"id": extra_chat, "type": "channel", "title": "Extra", "admin_bots": [BOT]}
    )
    [(bundle,)] = edge.query(
        "WITH p AS (INSERT INTO plans (channel_id, name, kind, price_minor, currency,"
        " period_days, grace_days, position) VALUES (%s, 'Both', 'bundle', 2000, 'UAH', 30, 3, 1)"
        " RETURNING id), c AS (INSERT INTO plan_channels SELECT p.id, unnest(ARRAY[%s, %s])"
        " FROM p) SELECT id FROM p",
        extra,
        store.channel,
        extra,
    )
    edge.start_worker()
    # Sold in Extra, chosen from Paid's plans.
    store.say(f"/start pay_{store.channel}")
    edge.wait_until(lambda: bool(store.sent()), 30, "the plans")
    offer = store.sent()[0]
    store.press(offer["message_id"], f"plan:{store.channel}:{bundle}")
    edge.wait_until(lambda: bool(store.edits()), 30, "the bundle")
    assert store.edits()[0]["text"] == (
        "<b>Paid</b> (Both): 20.00 UAH for 30 days.\n"
        "One payment opens 2 channels: <b>Paid</b>, <b>Extra</b>.\nChoose how to pay:"
    )
    store.press(offer["message_id"], f"pay:{store.channel}:subgate:{bundle}")
    edge.wait_until(lambda: len(store.edits()) == 2, 30, "the pay link")
    link = store.edits()[1]
    assert link["text"].endswith("your invite links come here.")
    pay_url = link["reply_markup"]["inline_keyboard"][0][0]["url"]

    done = HTTP.post(pay_url, data={"action": "pay", "amount": "20.00", "currency": "UAH"})
    assert done.status_code == 200 and "Paid." in done.text
    edge.wait_until(lambda: len(store.sent()) == 3, 30, "an invite link per channel")
    said = sorted(str(m["text"]).split(" is open")[0] for m in store.sent()[1:])
    assert [text.rsplit(" ", 1)[1] for text in said] == ["Extra", "Paid"]
    assert edge.query(
        "SELECT channel_id, count(*) FROM membership_events GROUP BY 1 ORDER BY 1"
    ) == [(store.channel, 1), (extra, 1)]
