"""Choosing what to pay for in the bot: several plans, a coupon under the pay link, a free
trial, an access code sent twice at once, a bundle of channels paid once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from botedge.words import FSI, PDI
from tests.billing.e2e import gateways
from tests.botedge.e2e.conftest import Edge
from tests.botedge.e2e.paying import BOT, BUYER, PAID, Store, open_store
from tests.conftest import HTTP, ServiceProcess

OPEN = f"access to {FSI}Paid{PDI} is open"


@pytest.fixture
def store(edge: Edge, start_service: Callable[..., ServiceProcess], database_url: str) -> Store:
    return open_store(edge, start_service, database_url)


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
    assert offer["text"] == f"<b>{FSI}Paid{PDI}</b>\nChoose a plan:"
    [(payload,)] = edge.query("SELECT payload FROM outbox WHERE method = 'sendMessage'")
    rows = payload["reply_markup"]["inline_keyboard"]
    assert [row[0]["callback_data"] for row in rows] == [
        f"plan:{store.channel}:{default}",
        f"plan:{store.channel}:{year}",
    ]
    assert rows[1][0]["text"] == f"{FSI}Year{PDI}: 120.00 UAH for 365 days"

    def shown(count: int) -> dict[str, Any]:
        edge.wait_until(lambda: len(store.edits()) >= count, 30, f"edit {count}")
        return store.edits()[count - 1]

    store.press(offer["message_id"], f"plan:{store.channel}:{year}")
    chosen = shown(1)
    assert (
        chosen["text"]
        == f"<b>{FSI}Paid{PDI}</b> ({FSI}Year{PDI}): 120.00 UAH for 365 days.\nChoose how to pay:"
    )
    assert [row[0]["callback_data"] for row in chosen["reply_markup"]["inline_keyboard"]] == [
        f"pay:{store.channel}:subgate:{year}",
        f"plan:{store.channel}",
    ]
    store.press(offer["message_id"], f"plan:{store.channel}")
    assert shown(2)["text"] == f"<b>{FSI}Paid{PDI}</b>\nChoose a plan:"
    store.press(offer["message_id"], f"plan:{store.channel}:{year}")
    shown(3)
    store.press(offer["message_id"], f"pay:{store.channel}:subgate:{year}")
    invoice = shown(4)
    assert invoice["text"].startswith(
        f"Pay <b>120.00 UAH</b> for <b>{FSI}Paid{PDI}</b> ({FSI}Year{PDI}) with Subgate."
    )
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
    assert refused["text"] == f"<b>{FSI}Paid{PDI}</b>: 12.50 UAH for 30 days.\nChoose how to pay:"
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
    assert said(4).startswith(f'I did not understand "{FSI}spring{PDI}"')

    store.press(edit["message_id"], f"coupon:{store.channel}:subgate:{plan}")
    said(5)
    store.say("20% off")
    assert said(6).startswith("That does not look like a coupon code")
    store.say("AUTUMN")
    assert said(7) == (
        f"That coupon cannot be used: {FSI}no coupon by that code{PDI}. Send another code, or"
        " Cancel."
    )
    store.say("spring")
    assert said(8).startswith(
        "Pay <b>10.00 UAH</b> instead of 12.50 UAH, with coupon <code>SPRING</code>, for"
        f" <b>{FSI}Paid{PDI}</b> with Subgate."
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
    assert OPEN in said(9)


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
        "text": f"{FSI}Free week{PDI}: free for 7 days, once",
        "callback_data": f"plan:{store.channel}:{trial}",
    }

    def shown(count: int) -> dict[str, Any]:
        edge.wait_until(lambda: len(store.edits()) >= count, 30, f"edit {count}")
        return store.edits()[count - 1]

    store.press(offer["message_id"], f"plan:{store.channel}:{trial}")
    chosen = shown(1)
    assert chosen["text"] == f"<b>{FSI}Paid{PDI}</b> ({FSI}Free week{PDI}): free for 7 days, once."
    assert [row[0]["callback_data"] for row in chosen["reply_markup"]["inline_keyboard"]] == [
        f"trial:{store.channel}:{trial}",
        f"plan:{store.channel}",
    ]
    store.press(offer["message_id"], f"trial:{store.channel}:{trial}")
    assert shown(2)["text"].startswith(
        f"Your free trial of <b>{FSI}Paid{PDI}</b> has started: 7 days."
    )
    edge.wait_until(
        lambda: any(OPEN in str(m["text"]) for m in store.sent()),
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
    assert shown(4)["text"] == (
        f"No free trial: {FSI}you have had this channel's free trial already{PDI}."
    )
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
    assert answers[1].startswith(
        f"Your code gives you 14 days of <b>{FSI}Paid{PDI}</b>: access until"
    )
    assert edge.query("SELECT count(*), min(reason) FROM membership_events") == [(1, "access_code")]
    store.say("/start code_B3NV5TJW6LQA", user=BUYER + 2)
    assert last(BUYER + 2).startswith(f"Your code gives you 7 days of <b>{FSI}Paid{PDI}</b>")
    edge.wait_until(
        lambda: any(OPEN in str(m["text"]) for m in store.sent(BUYER + 2)),
        30,
        "the invite link",
    )
    # A long word is not taken for a code.
    store.say("thankyouverymuch", user=BUYER + 3)
    assert last(BUYER + 3).startswith(f'I did not understand "{FSI}thankyouverymuch{PDI}"')


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
        f"<b>{FSI}Paid{PDI}</b> ({FSI}Both{PDI}): 20.00 UAH for 30 days.\n"
        f"One payment opens 2 channels: <b>{FSI}Paid{PDI}</b>, <b>{FSI}Extra{PDI}</b>.\n"
        "Choose how to pay:"
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
    assert [text.rsplit(" ", 1)[1] for text in said] == [f"{FSI}Extra{PDI}", f"{FSI}Paid{PDI}"]
    assert edge.query(
        "SELECT channel_id, count(*) FROM membership_events GROUP BY 1 ORDER BY 1"
    ) == [(store.channel, 1), (extra, 1)]
