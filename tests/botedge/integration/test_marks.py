"""Sends recorded together: every lane's row is recorded before its mark returns, marks made
while a statement runs share the next one, and a failed statement reaches every waiter."""

from __future__ import annotations

import asyncio

import psycopg

from botedge import errors
from botedge.marks import SentMarks
from tests.botedge.conftest import OpenPool, insert_bot


def queued(database_url: str, bot: int, count: int) -> list[int]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "INSERT INTO outbox (bot_id, chat_id, method, payload, dedupe_key)"
            " SELECT %s, n, 'sendMessage', '{}', 'mark:' || n FROM generate_series(1, %s) n"
            " RETURNING id",
            (bot, count),
        ).fetchall()
    return [int(r[0]) for r in rows]


def test_marks__sixty_at_once_recorded_in_one_statement(
    database_url: str, open_pool: OpenPool
) -> None:
    bot, _, _ = insert_bot(database_url)
    ids = queued(database_url, bot, 60)

    async def scenario() -> None:
        async with open_pool() as pool:
            marks = SentMarks(pool)
            await asyncio.gather(*(marks.mark(i, 1000 + i) for i in ids))

    asyncio.run(scenario())
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT id, state, telegram_message_id, attempts, xmin::text FROM outbox"
            " WHERE id = ANY(%s)",
            (ids,),
        ).fetchall()
    assert {(r[1], r[2] - r[0], r[3]) for r in rows} == {("sent", 1000, 1)}
    # Each statement commits alone, so rows written by one share its transaction id: the 60
    # marks, made before the writer first ran, went in one statement.
    assert len({r[4] for r in rows}) == 1


def test_marks__a_failed_statement_reaches_every_waiter(
    database_url: str, open_pool: OpenPool
) -> None:
    bot, _, _ = insert_bot(database_url)
    ids = queued(database_url, bot, 5)

    async def scenario() -> list[BaseException | None]:
        async with open_pool() as pool:
            pass
        # The pool is closed: every statement fails.
        marks = SentMarks(pool)
        return await asyncio.gather(*(marks.mark(i, 1) for i in ids), return_exceptions=True)

    outcomes = asyncio.run(scenario())
    assert all(isinstance(o, errors.BotedgeError) for o in outcomes), outcomes
    with psycopg.connect(database_url) as conn:
        pending = conn.execute(
            "SELECT count(*) FROM outbox WHERE id = ANY(%s) AND state = 'pending'", (ids,)
        ).fetchone()
    assert pending == (5,)
