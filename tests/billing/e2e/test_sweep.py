"""The sweep alone, and racing payments: real concurrent requests, real locks."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Any

import aiohttp
import httpx
import psycopg
import pytest

from billing.transitions import Extension, replay
from shared.tls import verified
from tests.billing.e2e import gateways
from tests.billing.e2e.gateways import Request
from tests.conftest import HTTP, Serve, Served, gather_limited, serve_billing
from tests.scale import sized

UTC = dt.UTC


def query(database_url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]


def sweep(client: httpx.Client, base: str) -> dict[str, Any]:
    response = client.post(f"{base}/v1/sweep", headers=gateways.sweep_request())
    assert response.status_code == 200, response.text
    return dict(response.json())


def history_is_consistent(
    database_url: str, person: int, channel: int, start: dt.datetime
) -> dt.datetime:
    """Each event continues from the one before; returns the replayed expires_at."""
    events = query(
        database_url,
        "SELECT cause, old_expires_at, new_expires_at, paid_at, period_days, from_status,"
        " to_status FROM membership_events WHERE person_id = %s AND channel_id = %s ORDER BY id",
        person,
        channel,
    )
    expires = start
    payments: list[Extension] = []
    for cause, old, new, paid_at, period, _, to_status in events:
        assert old == expires
        if cause == "payment":
            payments.append(Extension(paid_at, period))
            assert to_status == "active"
        else:
            assert new == old
        expires = new
    assert replay(payments, start) == expires
    final = query(
        database_url,
        "SELECT expires_at FROM memberships WHERE person_id = %s AND channel_id = %s",
        person,
        channel,
    )
    assert final == [(expires,)]
    return expires


def test_sweep__active_to_grace_to_expired_with_access_events(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url, grace_days=3)
    now = dt.datetime.now(UTC)
    gateways.set_membership(database_url, 1, channel, now - dt.timedelta(days=1))
    gateways.set_membership(database_url, 2, channel, now - dt.timedelta(days=5))
    gateways.set_membership(database_url, 3, channel, now + dt.timedelta(days=5))
    gateways.set_membership(database_url, 4, channel, now - dt.timedelta(hours=1), grace_days=0)
    with httpx.Client(verify=verified()) as client:
        first = sweep(client, billing.url)
        second = sweep(client, billing.url)
    assert first == {
        "examined": 3,
        "to_grace": 1,
        "to_expired": 2,
        "reminded": 0,
        "skipped": 0,
        "invoices_expired": 0,
        "orders_expired": 0,
        "more": False,
    }
    # The one in grace is due again only when its grace ends.
    assert second["examined"] == 0
    statuses = query(
        database_url,
        "SELECT p.telegram_user_id, m.status FROM memberships m JOIN people p ON p.id = m.person_id"
        " ORDER BY 1",
    )
    assert statuses == [(1, "grace"), (2, "expired"), (3, "active"), (4, "expired")]
    kinds = query(
        database_url,
        "SELECT p.telegram_user_id, a.kind FROM access_events a JOIN people p"
        " ON p.id = a.person_id ORDER BY 1",
    )
    assert kinds == [(1, "reminder"), (2, "revoke"), (4, "revoke")]


def test_sweep__batches_and_says_more(serve: Serve, database_url: str) -> None:
    billing = serve_billing(serve, database_url, SWEEP_BATCH="4")
    channel = gateways.add_paid_channel(database_url)
    past = dt.datetime.now(UTC) - dt.timedelta(days=10)
    for user in range(10):
        gateways.set_membership(database_url, 100 + user, channel, past)
    with httpx.Client(verify=verified()) as client:
        results = [sweep(client, billing.url) for _ in range(3)]
    assert [(r["examined"], r["more"]) for r in results] == [(4, True), (4, True), (2, False)]
    assert sum(r["to_expired"] for r in results) == 10


def test_sweep__equal_times_go_in_key_order(serve: Serve, database_url: str) -> None:
    billing = serve_billing(serve, database_url, SWEEP_BATCH="2")
    channel = gateways.add_paid_channel(database_url)
    past = dt.datetime.now(UTC).replace(microsecond=0) - dt.timedelta(days=10)
    people = [gateways.add_person(database_url, 300 + n) for n in range(6)]
    # Stored in the reverse of key order: only the tiebreak puts them back in it.
    for person in reversed(people):
        gateways.set_membership(database_url, 300 + people.index(person), channel, past)
    moved: list[list[int]] = []
    with httpx.Client(verify=verified()) as client:
        for _ in range(3):
            before = {
                row[0] for row in query(database_url, "SELECT person_id FROM membership_events")
            }
            sweep(client, billing.url)
            after = {
                row[0] for row in query(database_url, "SELECT person_id FROM membership_events")
            }
            moved.append(sorted(after - before))
    assert moved == [people[0:2], people[2:4], people[4:6]]


def test_sweep__does_not_wait_for_a_row_held_elsewhere(billing: Served, database_url: str) -> None:
    channel = gateways.add_paid_channel(database_url, grace_days=3)
    now = dt.datetime.now(UTC)
    first = gateways.set_membership(database_url, 401, channel, now - dt.timedelta(days=2))
    second = gateways.set_membership(database_url, 402, channel, now - dt.timedelta(days=1))
    with (
        psycopg.connect(database_url) as blocker,
        httpx.Client(timeout=60, verify=verified()) as client,
    ):
        # The second membership's row is held (as a payment's upsert would): the sweep decides
        # the first and leaves the second, without waiting for it.
        blocker.execute("SELECT 1 FROM memberships WHERE person_id = %s FOR UPDATE", (second,))
        answer = sweep(client, billing.url)
        assert (answer["examined"], answer["to_grace"]) == (1, 1)
        assert query(
            database_url, "SELECT status FROM memberships WHERE person_id = %s", first
        ) == [("grace",)]
        blocker.rollback()
        assert sweep(client, billing.url)["to_grace"] == 1


def test_sweep__leaves_a_locked_membership_for_the_next_call(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url, grace_days=3)
    now = dt.datetime.now(UTC)
    held = gateways.set_membership(database_url, 501, channel, now - dt.timedelta(days=2))
    free = gateways.set_membership(database_url, 502, channel, now - dt.timedelta(days=1))
    with (
        httpx.Client(timeout=10, verify=verified()) as client,
        psycopg.connect(database_url) as payment,
    ):
        # What a payment in flight holds: the membership's advisory lock.
        payment.execute("SELECT pg_advisory_xact_lock(%s::int4, %s::int4)", (held, channel))
        first = sweep(client, billing.url)
        payment.rollback()
        second = sweep(client, billing.url)
    assert (first["examined"], first["skipped"], first["to_grace"], first["more"]) == (
        2,
        1,
        1,
        True,
    )
    assert (second["skipped"], second["to_grace"], second["more"]) == (0, 1, False)
    statuses = query(database_url, "SELECT person_id, status FROM memberships ORDER BY 1")
    assert statuses == [(held, "grace"), (free, "grace")]


@pytest.mark.parametrize("token", [None, "wrong-sweep-token-000"])
def test_sweep__needs_the_token(billing: Served, token: str | None) -> None:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    response = HTTP.post(f"{billing.url}/v1/sweep", headers=headers)
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"


def test_sweep__expires_open_invoices_after_24_hours(billing: Served, database_url: str) -> None:
    channel = gateways.add_paid_channel(database_url)
    with httpx.Client(verify=verified()) as client:
        old = gateways.create_invoice(client, billing.url, 1, channel, "subgate")
        gateways.create_invoice(client, billing.url, 2, channel, "subgate")
        query(
            database_url,
            "UPDATE invoices SET expires_at = now() - interval '1 minute'"
            " WHERE order_reference = %s RETURNING id",
            old["order_reference"],
        )
        assert sweep(client, billing.url)["invoices_expired"] == 1
        # The person hears their link lapsed, once, however many sweeps run.
        assert sweep(client, billing.url)["invoices_expired"] == 0
        notices = query(database_url, "SELECT kind, notice_key FROM access_events")
        [(invoice_id,)] = query(
            database_url,
            "SELECT id FROM invoices WHERE order_reference = %s",
            old["order_reference"],
        )
        assert notices == [("checkout_lapsed", f"lapsed:{invoice_id}")]
        # A late payment is still money received: applied.
        late = gateways.subgate(old["order_reference"], "late", "12.50").send(client, billing.url)
    assert late.json()["applied"] is True
    assert query(database_url, "SELECT status FROM invoices ORDER BY id") == [("paid",), ("open",)]


def test_sweep__an_active_member_hears_nothing_of_a_lapsed_invoice(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url)
    with httpx.Client(verify=verified()) as client:
        paid = gateways.create_invoice(client, billing.url, 1, channel, "subgate")
        spare = gateways.create_invoice(client, billing.url, 1, channel, "wayforpay")
        gateways.subgate(paid["order_reference"], "pay-1", "12.50").send(client, billing.url)
        query(
            database_url,
            "UPDATE invoices SET expires_at = now() - interval '1 minute'"
            " WHERE order_reference = %s RETURNING id",
            spare["order_reference"],
        )
        assert sweep(client, billing.url)["invoices_expired"] == 1
    assert query(database_url, "SELECT kind FROM access_events") == [("grant",)]


async def race(
    base: str, requests: list[Request], sweeps: int, sweeps_first: bool = False
) -> list[tuple[int, str]]:
    """The deliveries and the sweep calls all at once; each answer's status and body (the
    deliveries' first). `sweeps_first` sends the sweeps off first, which tilts the race their
    way without deciding it. On aiohttp: httpx's async client spent 30 of the 4,000-delivery
    test's 64 s in the client."""
    connector = aiohttp.TCPConnector(limit=64)
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=60)
    ) as client:

        async def post(path: str, content: bytes, headers: dict[str, str]) -> tuple[int, str]:
            async with client.post(base + path, data=content, headers=headers) as response:
                return response.status, await response.text()

        calls = [post(r.path, r.content, r.headers) for r in requests]
        sweeping = [post("/v1/sweep", b"", gateways.sweep_request()) for _ in range(sweeps)]
        if not sweeps_first:
            return await gather_limited(calls + sweeping)
        answers = await gather_limited(sweeping + calls)
        return answers[sweeps:] + answers[:sweeps]


@pytest.mark.slow(12)
@pytest.mark.parametrize("shared_paid_at", [True, False])
def test_five_payments_race_five_sweeps__always_active_and_replayable(
    billing: Served, database_url: str, shared_paid_at: bool
) -> None:
    period = 30
    channel = gateways.add_paid_channel(database_url, period_days=period, grace_days=3)
    # At least this many runs, and on until each order has happened (bounded).
    repetitions = 50 if shared_paid_at else 20
    swept_first = runs = 0
    with httpx.Client(verify=verified()) as client:
        for rep in range(400):
            if rep >= repetitions and 0 < swept_first < runs:
                break
            runs += 1
            user = 10_000 + rep
            old = dt.datetime.now(UTC).replace(microsecond=0) - dt.timedelta(days=8)
            person = gateways.set_membership(database_url, user, channel, old)
            orders = [
                gateways.create_invoice(client, billing.url, user, channel, "subgate")
                for _ in range(5)
            ]
            t = int(time.time())
            requests = [
                gateways.subgate(
                    o["order_reference"],
                    f"rep{rep}-pay{i}",
                    "12.50",
                    ts=t if shared_paid_at else t - 60 * i,
                )
                for i, o in enumerate(orders)
            ]
            # Every other run sends the sweeps off first: on a fast machine the payments,
            # sent first, won 400 runs out of 400.
            responses = asyncio.run(
                race(billing.url, requests, sweeps=5, sweeps_first=rep % 2 == 1)
            )
            assert all(status == 200 for status, _ in responses), responses
            status, expires = query(
                database_url,
                "SELECT status, expires_at FROM memberships WHERE person_id = %s",
                person,
            )[0]
            assert status == "active"
            assert history_is_consistent(database_url, person, channel, old) == expires
            swept_first += bool(
                query(
                    database_url,
                    "SELECT 1 FROM membership_events WHERE person_id = %s AND cause = 'sweep'",
                    person,
                )
            )
            if shared_paid_at:
                paid_at = dt.datetime.fromtimestamp(t, UTC)
                assert expires == max(old, paid_at) + dt.timedelta(days=5 * period)
    print(f"sweep moved the membership before a payment in {swept_first}/{runs} runs")
    # The race went both ways: a sweep first in some runs, payments first in others.
    assert 0 < swept_first < runs


@pytest.mark.slow(12)
@pytest.mark.scaled
def test_many_memberships_each_delivered_many_times_beside_three_sweeps(
    billing: Served, database_url: str
) -> None:
    # 200 memberships and 20 deliveries each at full size.
    memberships, times = sized(60, 200), sized(10, 20)
    channel = gateways.add_paid_channel(database_url, period_days=30, grace_days=2)
    old = dt.datetime.now(UTC).replace(microsecond=0) - dt.timedelta(days=4)
    people: dict[int, int] = {}
    requests: list[Request] = []
    with httpx.Client(verify=verified()) as client:
        for n in range(memberships):
            user = 50_000 + n
            people[user] = gateways.set_membership(database_url, user, channel, old, grace_days=2)
            order = gateways.create_invoice(client, billing.url, user, channel, "subgate")
            requests.append(gateways.subgate(order["order_reference"], f"bulk-{n}", "12.50"))
    deliveries = [r for r in requests for _ in range(times)]
    responses = asyncio.run(race(billing.url, deliveries, sweeps=3))
    assert all(status == 200 for status, _ in responses)
    assert query(database_url, "SELECT count(*) FROM payments") == [(memberships,)]
    per_membership = query(
        database_url,
        "SELECT count(*) FROM membership_events WHERE cause = 'payment'"
        " GROUP BY person_id, channel_id",
    )
    assert per_membership == [(1,)] * memberships
    assert query(database_url, "SELECT DISTINCT status FROM memberships") == [("active",)]
    for person in people.values():
        history_is_consistent(database_url, person, channel, old)
    outcomes = dict(query(database_url, "SELECT outcome, count(*) FROM gateway_events GROUP BY 1"))
    assert outcomes == {
        "applied": memberships,
        "duplicate": memberships * (times - 1),
    }
