"""botedge's stores record the moment their caller's clock gives, and cut off by it: a
ManualClock years from the database's time decides what is stale, what is recorded and what is
pruned, with nothing waited for."""

from __future__ import annotations

import asyncio
import datetime as dt

import psycopg

from botedge import inbox_store, outbox_store
from botedge.ids import BotId
from botedge.marks import SentMarks
from shared.clock import ManualClock
from tests.botedge.conftest import OpenPool, insert_bot


def test_store_time__a_poll_offset_goes_stale_a_week_after_its_last_update_by_the_given_clock(
    database_url: str, open_pool: OpenPool
) -> None:
    bot = BotId(insert_bot(database_url, mode="polling")[0])
    # Far from the database's own clock: only the given one can make these answers.
    then = dt.datetime(2031, 3, 1, 12, tzinfo=dt.UTC)

    async def scenario() -> list[tuple[int, bool]]:
        async with open_pool() as pool, pool.connection() as conn:
            await inbox_store.advance_poll_offset(conn, bot, 41, then)
            return [
                await inbox_store.poll_start(conn, bot, then + dt.timedelta(days=days))
                for days in (6, 8)
            ]

    assert asyncio.run(scenario()) == [(41, False), (41, True)]
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT last_update_at FROM bots WHERE id = %s", (bot,)).fetchone()
    assert row is not None and row[0] == then


def test_store_time__sends_marked_at_the_clocks_time_and_pruned_days_after_it(
    database_url: str, open_pool: OpenPool
) -> None:
    bot = BotId(insert_bot(database_url)[0])
    clock = ManualClock(dt.datetime(2031, 3, 1, 12, tzinfo=dt.UTC))
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "INSERT INTO outbox (bot_id, chat_id, method, payload, dedupe_key)"
            " SELECT %s, n, 'sendMessage', '{}', 'time:' || n FROM generate_series(1, 2) n"
            " RETURNING id",
            (bot,),
        ).fetchall()
    ids = [int(r[0]) for r in rows]

    async def scenario() -> list[int]:
        async with open_pool() as pool:
            await SentMarks(pool, clock).mark(ids[0], 900)
            clock.advance(86400)
            await SentMarks(pool, clock).mark(ids[1], 901)
            pruned = []
            async with pool.connection() as conn:
                for days in (2, 1):
                    # Two days after the first send: only a one-day cutoff reaches it.
                    later = clock.now() + dt.timedelta(days=1)
                    pruned.append(await outbox_store.prune(conn, days, later))
            return pruned

    assert asyncio.run(scenario()) == [0, 1]
    with psycopg.connect(database_url) as conn:
        left = conn.execute(
            "SELECT id, sent_at FROM outbox WHERE id = ANY(%s) ORDER BY id", (ids,)
        ).fetchall()
    assert left == [(ids[1], dt.datetime(2031, 3, 2, 12, tzinfo=dt.UTC))]
