"""The billing -> botedge event queue: claimed once, fenced, each key's events in id order."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import psycopg

from botedge.access import ACCESS_EVENTS
from botedge.events import Event, EventQueue, LostClaim
from shared.db import connect
from tests.billing.e2e import gateways
from tests.botedge.conftest import OpenPool


def membership_with_events(database_url: str, user: int, channel: int, kinds: list[str]) -> None:
    person = gateways.set_membership(
        database_url, user, channel, dt.datetime.now(dt.UTC) - dt.timedelta(days=1)
    )
    with psycopg.connect(database_url) as conn:
        for kind in kinds:
            row = conn.execute(
                "INSERT INTO membership_events (person_id, channel_id, from_status, to_status,"
                " old_expires_at, new_expires_at, cause, at) VALUES (%s, %s, 'active', 'grace',"
                " now(), now(), 'sweep', now()) RETURNING id",
                (person, channel),
            ).fetchone()
            assert row is not None
            conn.execute(
                "INSERT INTO access_events (kind, person_id, channel_id, membership_event_id,"
                " expires_at, created_at) VALUES (%s, %s, %s, %s, now(), now())",
                (kind, person, channel, row[0]),
            )


def kinds(events: list[Event]) -> list[tuple[int, str]]:
    return [(int(e.row["person_id"]), str(e.row["kind"])) for e in events]


def test_queue__a_memberships_events_one_at_a_time_in_order_others_in_parallel(
    database_url: str,
    open_pool: OpenPool,
) -> None:
    channel = gateways.add_paid_channel(database_url)
    membership_with_events(database_url, 1, channel, ["grant", "revoke"])
    membership_with_events(database_url, 2, channel, ["reminder"])

    async def scenario() -> dict[str, Any]:
        async with open_pool() as pool:
            queue = EventQueue(pool, ACCESS_EVENTS, lease_seconds=30, backoff_base=60)
            first = await queue.claim(10)
            # The grant and the other membership's reminder; the revoke waits for the grant.
            again = await queue.claim(10)
            [grant] = [e for e in first if e.row["kind"] == "grant"]
            # The grant fails once: back off. The revoke still may not pass it.
            await queue.failed_attempt(grant, "no manager bot")
            while_waiting = await queue.claim(10)
            return {
                "first": sorted(kinds(first)),
                "again": again,
                "while_waiting": while_waiting,
            }

    seen = asyncio.run(scenario())
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT telegram_user_id, id FROM people").fetchall()
    person = {int(user): int(pid) for user, pid in rows}
    assert seen["first"] == sorted([(person[1], "grant"), (person[2], "reminder")])
    assert seen["again"] == []
    assert seen["while_waiting"] == []


def test_queue__the_next_event_once_the_earlier_is_done_and_a_stale_claim_cannot_finish(
    database_url: str,
    open_pool: OpenPool,
) -> None:
    channel = gateways.add_paid_channel(database_url)
    membership_with_events(database_url, 1, channel, ["grant", "revoke"])

    async def scenario() -> tuple[list[str], bool]:
        async with open_pool() as pool:
            queue = EventQueue(pool, ACCESS_EVENTS, lease_seconds=30)
            [grant] = await queue.claim(10)
            conn = await connect(database_url, autocommit=True)
            async with conn, conn.transaction():
                await queue.finish(conn, grant)
            [revoke] = await queue.claim(10)
            # The revoke's claim is taken over (lease ran out): the old holder cannot finish.
            async with await connect(database_url, autocommit=True) as admin:
                await admin.execute(
                    "UPDATE access_events SET claim_expires_at = now() - interval '1 s'"
                    " WHERE id = %s",
                    (revoke.id,),
                )
            [taken] = await queue.claim(10)
            lost = False
            conn = await connect(database_url, autocommit=True)
            async with conn:
                try:
                    async with conn.transaction():
                        await queue.finish(conn, revoke)
                except LostClaim:
                    lost = True
            return [str(grant.row["kind"]), str(taken.row["kind"])], lost

    order, lost = asyncio.run(scenario())
    assert order == ["grant", "revoke"]
    assert lost
    with psycopg.connect(database_url) as conn:
        states = conn.execute("SELECT kind, state FROM access_events ORDER BY id").fetchall()
    assert states == [("grant", "done"), ("revoke", "processing")]
