"""Bundles: a plan covering several paid channels, offered in each. One payment extends the
person's membership of every channel in one transaction, with a history row and a grant per
channel; the memberships are locked in ascending channel order, so overlapping bundles paid at
once wait for each other instead of deadlocking."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from billing.app import create_app
from billing.settings import load
from billing.transitions import Extension, replay
from shared.clock import ManualClock
from shared.testing import serve_in_thread
from shared.tls import verified
from tests.billing.e2e import gateways
from tests.billing.e2e.test_grants import BEARER, DAY, Billing
from tests.conftest import HTTP, service_env, wait_until


@pytest.fixture
def billing(database_url: str) -> Iterator[Billing]:
    clock = ManualClock(dt.datetime.now(dt.UTC).replace(microsecond=0))
    with serve_in_thread(create_app(load(service_env(database_url)), clock=clock)) as url:
        yield Billing(url, clock, database_url)


def channels(database_url: str, count: int) -> list[int]:
    """Paid channels selling in USD, titled A, B, C, ... in ascending id order."""
    made = []
    for n in range(count):
        channel = gateways.add_paid_channel(database_url, chat_id=-1001000000100 - n)
        with psycopg.connect(database_url) as conn:
            conn.execute("UPDATE channels SET title = %s WHERE id = %s", (chr(65 + n), channel))
        made.append(channel)
    return made


def add_bundle(
    database_url: str, home: int, covers: list[int], price_minor: int, period_days: int
) -> int:
    plan = gateways.insert_row(
        database_url,
        "plans",
        {
            "channel_id": home,
            "name": f"Bundle {price_minor}",
            "kind": "bundle",
            "price_minor": price_minor,
            "currency": "USD",
            "period_days": period_days,
            "grace_days": 2,
        },
    )
    with psycopg.connect(database_url) as conn:
        for channel in covers:
            conn.execute("INSERT INTO plan_channels VALUES (%s, %s)", (plan, channel))
    return plan


def order(billing: Billing, user: int, channel: int, plan: int) -> str:
    body = {
        "telegram_user_id": user,
        "channel_id": channel,
        "gateway": "subgate",
        "plan_id": plan,
    }
    answer = HTTP.post(f"{billing.url}/internal/invoices", json=body, headers=BEARER)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["order_reference"])


def test_bundle__one_payment_extends_every_channel_once_with_a_grant_each(
    billing: Billing,
) -> None:
    a, b, c, d = channels(billing.database_url, 4)
    bundle = add_bundle(billing.database_url, a, [a, b, c], 3000, 30)
    gateways.set_membership(billing.database_url, 901, c, billing.clock.now() + 10 * DAY)

    # Offered in each channel it covers, named with its channels; not in another.
    def offered(channel: int) -> list[tuple[str, list[str]]]:
        answer = HTTP.get(
            f"{billing.url}/internal/gateways", params={"channel_id": channel}, headers=BEARER
        ).json()
        return [(p["kind"], p["channels"]) for p in answer["offer"]["plans"]]

    assert offered(b) == [("regular", []), ("bundle", ["A", "B", "C"])]
    assert offered(d) == [("regular", [])]

    # Bought in B: the invoice keeps the bundle's channels.
    reference = order(billing, 901, b, bundle)
    assert billing.query("SELECT channel_id, bundle_channel_ids, amount_minor FROM invoices") == [
        (b, [a, b, c], 3000)
    ]
    now = billing.clock.now()
    paid = gateways.subgate(reference, "bundle-1", "30.00", ts=int(now.timestamp()))
    with httpx.Client(verify=verified()) as client:
        first = paid.send(client, billing.url).json()
        again = paid.send(client, billing.url).json()
    assert first["applied"] is True
    assert first["membership"] == {"status": "active", "expires_at": (now + 30 * DAY).isoformat()}
    assert again["duplicate"] is True

    assert billing.query(
        "SELECT channel_id, status, expires_at, grace_days FROM memberships ORDER BY channel_id"
    ) == [
        (a, "active", now + 30 * DAY, 2),
        (b, "active", now + 30 * DAY, 2),
        (c, "active", now + 40 * DAY, 2),
    ]
    [(payment,)] = billing.query("SELECT id FROM payments")
    assert billing.query(
        "SELECT e.channel_id, e.old_expires_at, e.new_expires_at, a.kind"
        " FROM membership_events e JOIN access_events a ON a.membership_event_id = e.id"
        " WHERE e.payment_id = %s ORDER BY e.channel_id",
        payment,
    ) == [
        (a, None, now + 30 * DAY, "grant"),
        (b, None, now + 30 * DAY, "grant"),
        (c, now + 10 * DAY, now + 40 * DAY, "grant"),
    ]
    # Revenue is counted once, whatever the bundle opens.
    assert billing.query(
        "SELECT count(*), sum(amount) FROM stat_events WHERE kind = 'payment'"
    ) == [(1, 3000)]


def test_bundle__with_a_channel_no_longer_paid_is_neither_offered_nor_sold(
    billing: Billing,
) -> None:
    a, b = channels(billing.database_url, 2)
    bundle = add_bundle(billing.database_url, a, [a, b], 2000, 30)
    with psycopg.connect(billing.database_url) as conn:
        conn.execute("UPDATE channels SET is_paid = false WHERE id = %s", (b,))
    answer = HTTP.get(
        f"{billing.url}/internal/gateways", params={"channel_id": a}, headers=BEARER
    ).json()
    assert [p["kind"] for p in answer["offer"]["plans"]] == ["regular"]
    refused = HTTP.post(
        f"{billing.url}/internal/invoices",
        json={"telegram_user_id": 902, "channel_id": a, "gateway": "subgate", "plan_id": bundle},
        headers=BEARER,
    )
    assert refused.status_code == 404
    assert refused.json()["type"] == "/problems/unknown-plan"
    assert billing.query("SELECT count(*) FROM invoices") == [(0,)]


def advisory_locks(database_url: str, granted: bool) -> set[int]:
    """The channels of the membership locks held (or waited for) right now."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2"
            " AND granted = %s",
            (granted,),
        ).fetchall()
    return {int(row[0]) for row in rows}


def test_bundle__locks_its_channels_in_ascending_order_whichever_it_was_bought_in(
    billing: Billing,
) -> None:
    """Bought in its last channel, the bundle still locks the first ones first: held up at C,
    it already holds A and B (buying-channel-first would hold nothing)."""
    a, b, c = channels(billing.database_url, 3)
    bundle = add_bundle(billing.database_url, a, [a, b, c], 3000, 30)
    reference = order(billing, 903, c, bundle)
    [(person,)] = billing.query("SELECT id FROM people WHERE telegram_user_id = 903")
    paid = gateways.subgate(
        reference, "bundle-order", "30.00", ts=int(billing.clock.now().timestamp())
    )
    answers: list[dict[str, Any]] = []

    with psycopg.connect(billing.database_url) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(%s, %s)", (person, c))
        sender = threading.Thread(
            target=lambda: answers.append(paid.send(HTTP, billing.url).json())
        )
        sender.start()
        wait_until(
            lambda: advisory_locks(billing.database_url, granted=False) == {c},
            10,
            "the payment waiting for C's lock",
        )
        assert advisory_locks(billing.database_url, granted=True) == {a, b, c}
        holder.rollback()
    sender.join(timeout=30)
    assert answers and answers[0]["applied"] is True
    assert billing.query("SELECT count(*) FROM membership_events") == [(3,)]


def test_bundle__two_overlapping_paid_twenty_times_at_once_no_deadlock_each_extended_exactly(
    billing: Billing,
) -> None:
    """X covers A, B, C and is bought in C; Y covers B, C, D and is bought in B: taken in the
    order they were bought in, the locks on B and C would cross. Every payment applies, every
    membership runs exactly the paid days past the payment, and every history replays."""
    a, b, c, d = channels(billing.database_url, 4)
    x = add_bundle(billing.database_url, a, [a, b, c], 3000, 30)
    y = add_bundle(billing.database_url, b, [b, c, d], 1500, 7)
    references = [
        order(billing, 904, c, x) if n % 2 else order(billing, 904, b, y) for n in range(20)
    ]
    now = billing.clock.now()
    deliveries = [
        gateways.subgate(
            ref, f"overlap-{n}", "30.00" if n % 2 else "15.00", ts=int(now.timestamp())
        )
        for n, ref in enumerate(references)
    ]

    async def pay_all() -> list[dict[str, Any]]:
        async with httpx.AsyncClient(timeout=60, verify=verified()) as client:
            answers = await asyncio.gather(*(d.send_async(client, billing.url) for d in deliveries))
        return [answer.json() for answer in answers]

    answers = asyncio.run(pay_all())
    assert [answer["applied"] for answer in answers] == [True] * 20

    paid_days = {a: 10 * 30, b: 10 * 30 + 10 * 7, c: 10 * 30 + 10 * 7, d: 10 * 7}
    assert dict(billing.query("SELECT channel_id, expires_at FROM memberships")) == {
        channel: now + days * DAY for channel, days in paid_days.items()
    }
    for channel, days in paid_days.items():
        history = billing.query(
            "SELECT old_expires_at, new_expires_at, paid_at, period_days, payment_id"
            " FROM membership_events WHERE channel_id = %s ORDER BY id",
            channel,
        )
        assert sum(row[3] for row in history) == days
        # Each row starts where the one before it ended, and the rows replay to the state.
        assert [row[0] for row in history] == [None] + [row[1] for row in history[:-1]]
        assert replay(Extension(row[2], row[3]) for row in history) == now + days * DAY

    # B and C are in both bundles: their histories list the payments in one order.
    def payments_of(channel: int) -> list[int]:
        rows = billing.query(
            "SELECT payment_id FROM membership_events WHERE channel_id = %s ORDER BY id", channel
        )
        return [row[0] for row in rows]

    assert payments_of(b) == payments_of(c)
    assert len(set(payments_of(b))) == 20
    assert billing.query("SELECT count(*) FROM access_events WHERE kind = 'grant'") == [(60,)]
