"""Refunds and chargebacks through the gateways' webhooks: each takes back what its payment
bought, once, whatever the redeliveries; the membership ends as the replay of what survives."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import httpx
import psycopg

from billing.transitions import VOID, Extension, replay
from shared.tls import verified
from tests.billing.e2e import gateways
from tests.conftest import SECRETS, Served

USER = 8801


def rows(database_url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]


def membership(database_url: str, channel: int) -> tuple[str, dt.datetime]:
    [(status, expires_at)] = rows(
        database_url,
        "SELECT m.status, m.expires_at FROM memberships m JOIN people p ON p.id = m.person_id"
        " WHERE p.telegram_user_id = %s AND m.channel_id = %s",
        USER,
        channel,
    )
    return str(status), expires_at


def pay_stripe(client: httpx.Client, billing: Served, channel: int, intent: str) -> None:
    order = gateways.create_invoice(client, billing.url, USER, channel, "stripe")
    paid = gateways.stripe(order["order_reference"], intent, 1250).send(client, billing.url)
    assert paid.json()["applied"] is True, paid.text


def test_refund__stripe_refund_of_the_latest_payment_delivered_twice_takes_its_period_back_once(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url, price_minor=1250, currency="USD")
    with httpx.Client(verify=verified()) as client:
        pay_stripe(client, billing, channel, "pi_first")
        _, after_first = membership(database_url, channel)
        pay_stripe(client, billing, channel, "pi_second")
        _, after_second = membership(database_url, channel)
        assert after_second == after_first + dt.timedelta(days=30)
        answers = [
            gateways.stripe_refund("pi_second", 1250).send(client, billing.url) for _ in range(2)
        ]
    assert [a.status_code for a in answers] == [200, 200]
    assert [(a.json()["applied"], a.json()["duplicate"]) for a in answers] == [
        (True, False),
        (False, True),
    ]
    # Back to where the first payment left it, and still active.
    assert membership(database_url, channel) == ("active", after_first)
    [(paid_at,)] = rows(
        database_url, "SELECT paid_at FROM payments WHERE external_payment_id = 'pi_first'"
    )
    assert replay([Extension(paid_at, 30)]) == after_first
    assert rows(database_url, "SELECT kind, amount_minor, currency FROM refunds") == [
        ("refund", 1250, "USD")
    ]
    assert rows(
        database_url,
        "SELECT outcome FROM gateway_events WHERE event_type = 'charge.refunded' ORDER BY id",
    ) == [("refund_applied",), ("refund_duplicate",)]
    [(old, new)] = rows(
        database_url,
        "SELECT old_expires_at, new_expires_at FROM membership_events WHERE cause = 'refund'",
    )
    assert (old, new) == (after_second, after_first)
    # Still active: nothing to take out of the channel.
    assert rows(database_url, "SELECT kind FROM access_events WHERE kind = 'revoke'") == []


def test_refund__wayforpay_refunded_twice_then_voided_ends_access_once_with_one_removal(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url, price_minor=1250, currency="USD")
    with httpx.Client(verify=verified()) as client:
        order = gateways.create_invoice(client, billing.url, USER, channel, "wayforpay")
        reference = order["order_reference"]
        assert gateways.wayforpay(reference, "12.50").send(client, billing.url).status_code == 200
        assert membership(database_url, channel)[0] == "active"
        answers = [
            gateways.wayforpay(reference, "12.50", status=status).send(client, billing.url)
            for status in ("Refunded", "Refunded", "Voided")
        ]
    # WayForPay is answered with its signed accept each time.
    assert [a.json()["status"] for a in answers] == ["accept"] * 3
    # Nothing survives the only payment: expired, with no paid time at all, removed once.
    assert membership(database_url, channel) == ("expired", VOID)
    assert rows(database_url, "SELECT kind FROM access_events ORDER BY id") == [
        ("grant",),
        ("revoke",),
    ]
    assert rows(
        database_url,
        "SELECT event_type, outcome FROM gateway_events WHERE outcome LIKE 'refund%%' ORDER BY id",
    ) == [
        ("Refunded", "refund_applied"),
        ("Refunded", "refund_duplicate"),
        ("Voided", "refund_duplicate"),
    ]
    assert rows(database_url, "SELECT count(*) FROM refunds") == [(1,)]


def test_refund__a_stripe_dispute_twice_is_one_chargeback_and_an_unknown_one_changes_nothing(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url, price_minor=1250, currency="USD")
    with httpx.Client(verify=verified()) as client:
        pay_stripe(client, billing, channel, "pi_disputed")
        disputes = [
            gateways.stripe_refund("pi_disputed", 1250, dispute=True).send(client, billing.url)
            for _ in range(2)
        ]
        unknown = gateways.stripe_refund("pi_never_seen", 500).send(client, billing.url)
    assert [d.json()["applied"] for d in disputes] == [True, False]
    assert rows(database_url, "SELECT kind FROM refunds") == [("chargeback",)]
    assert membership(database_url, channel)[0] == "expired"
    # Authentic but about no payment of ours: 2xx, recorded for the owner, nothing written.
    assert unknown.status_code == 200
    assert (unknown.json()["applied"], unknown.json()["reason"]) == (False, "no such payment")
    assert rows(
        database_url,
        "SELECT outcome FROM gateway_events WHERE event_type = 'charge.refunded'",
    ) == [("refund_unknown",)]
    assert rows(database_url, "SELECT count(*) FROM refunds") == [(1,)]
    # The owner cannot refund a card payment from here: that is the gateway's dashboard,
    # whose refund arrives by webhook.
    [(payment_id,)] = rows(database_url, "SELECT id FROM payments")
    asked = httpx.post(
        f"{billing.url}/internal/payments/{payment_id}/refund",
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
    )
    assert asked.status_code == 422
    assert asked.json()["type"] == "/problems/invalid-values"


RACES = 50


def test_refund__a_refund_a_renewal_and_a_sweep_at_once_fifty_times_end_in_the_replay(
    billing: Served, database_url: str
) -> None:
    """Each time: the first payment's period ran out a day ago (its history moved back 30 days,
    so the sweep has a decision to make), then its refund, a renewal and a sweep are sent at
    once. Whatever the order they are applied in, the renewal alone survives."""
    channel = gateways.add_paid_channel(database_url, price_minor=1250, currency="USD")
    orders: dict[str, int] = {"refund first": 0, "renewal first": 0}

    async def race(client: httpx.AsyncClient, user: int) -> None:
        first = gateways.create_invoice(client_sync, billing.url, user, channel, "stripe")
        paid = gateways.stripe(first["order_reference"], f"pi_a{user}", 1250)
        assert paid.send(client_sync, billing.url).json()["applied"] is True
        with psycopg.connect(database_url) as conn:
            conn.execute(
                "WITH who AS (SELECT id FROM people WHERE telegram_user_id = %(user)s),"
                " moved AS (UPDATE membership_events e SET paid_at = paid_at - interval '30 days',"
                "   new_expires_at = new_expires_at - interval '30 days' FROM who"
                "   WHERE e.person_id = who.id RETURNING e.id)"
                " UPDATE memberships m SET expires_at = expires_at - interval '30 days',"
                "   next_check_at = expires_at - interval '30 days' FROM who"
                " WHERE m.person_id = who.id",
                {"user": user},
            )
        second = gateways.create_invoice(client_sync, billing.url, user, channel, "stripe")
        renewal = gateways.stripe(second["order_reference"], f"pi_b{user}", 1250)
        refund = gateways.stripe_refund(f"pi_a{user}", 1250)
        sends = [
            refund.send_async(client, billing.url),
            renewal.send_async(client, billing.url),
            client.post(f"{billing.url}/v1/sweep", headers=gateways.sweep_request()),
        ]
        # Every third race the sweep is sent first: on a loaded machine the one sent last
        # rarely finds the membership's lock free.
        if user % 3 == 0:
            sends = sends[2:] + sends[:2]
        answers = await asyncio.gather(*sends)
        assert [a.status_code for a in answers] == [200, 200, 200]
        [(paid_at,)] = rows(
            database_url,
            "SELECT paid_at FROM payments WHERE external_payment_id = %s",
            f"pi_b{user}",
        )
        assert membership_of(database_url, user, channel) == (
            "active",
            replay([Extension(paid_at, 30)]),
        )
        [(refund_event, renewal_event)] = rows(
            database_url,
            "SELECT max(e.id) FILTER (WHERE e.cause = 'refund'),"
            "       max(e.id) FILTER (WHERE e.cause = 'payment')"
            "  FROM membership_events e JOIN people p ON p.id = e.person_id"
            " WHERE p.telegram_user_id = %s",
            user,
        )
        orders["refund first" if refund_event < renewal_event else "renewal first"] += 1

    sweeps = "SELECT count(*) FROM membership_events WHERE cause = 'sweep'"

    def every_way() -> bool:
        both = orders["refund first"] > 0 and orders["renewal first"] > 0
        return both and rows(database_url, sweeps) > [(0,)]

    async def races() -> int:
        """RACES of them, and more (up to four times as many) until each way was seen: on a
        busy machine the sweep, which skips a membership whose lock is held, wins fewer."""
        async with httpx.AsyncClient(timeout=30, verify=verified()) as client:
            for n in range(4 * RACES):
                await race(client, 30_000 + n)
                if n + 1 >= RACES and every_way():
                    return n + 1
        return 4 * RACES

    with httpx.Client(timeout=30, verify=verified()) as client_sync:
        raced = asyncio.run(races())
    # The race went both ways, and the sweep had its say in some of them (into grace before
    # the refund or the renewal was applied).
    assert orders["refund first"] > 0 and orders["renewal first"] > 0, orders
    [(swept,)] = rows(database_url, sweeps)
    assert 0 < swept <= raced, (swept, raced)


def membership_of(database_url: str, user: int, channel: int) -> tuple[str, dt.datetime]:
    [(status, expires_at)] = rows(
        database_url,
        "SELECT m.status, m.expires_at FROM memberships m JOIN people p ON p.id = m.person_id"
        " WHERE p.telegram_user_id = %s AND m.channel_id = %s",
        user,
        channel,
    )
    return str(status), expires_at
