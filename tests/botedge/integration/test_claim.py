"""The claim, finish and retry statements against a real PostgreSQL, with real concurrency."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections import defaultdict
from typing import Any

import psycopg
import pytest
from prometheus_client import REGISTRY
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from botedge import sqlq
from botedge.consumer import ConsumerConfig, InboxConsumer
from botedge.handlers import BotLogic
from botedge.inbox_store import AFFINITY_SECONDS, CLAIM_LOST, NO_PERSON
from botedge.updates import InboxRow
from shared.listen import Notifier
from tests.botedge.conftest import OpenPool, enqueue, insert_bot

Q = sqlq.Q


def params(limit: int, lock_seconds: float = 30, own: list[int] | None = None) -> dict[str, Any]:
    return {
        "limit": limit,
        "lock_seconds": lock_seconds,
        "holder": "t",
        "own": own or [],
        "fresh": AFFINITY_SECONDS,
    }


def claim(
    conn: psycopg.Connection[Any],
    limit: int,
    lock_seconds: float = 30,
    own: list[int] | None = None,
) -> list[Any]:
    with conn.transaction():
        rows = conn.execute(Q["claim_updates"], params(limit, lock_seconds, own)).fetchall()
    return rows


def finished(row: Any) -> dict[str, Any]:
    """The statement a worker finishes an update with, without replies or a person."""
    claim = {"id": row["id"], "lock_token": row["lock_token"], "attempt": row["attempt"]}
    return {
        **claim,
        **NO_PERSON,
        "replies": Jsonb([]),
        "events": Jsonb([]),
        "bot_id": row["bot_id"],
        "chats": [],
        "now": dt.datetime.now(dt.UTC),
    }


def finish(conn: psycopg.Connection[Any], row: Any) -> int:
    """1 when the claim held and the update is done; 0 when the claim was lost (the statement
    fails and nothing is written)."""
    try:
        with conn.transaction():
            conn.execute(Q["finish_with_replies"], finished(row))
    except psycopg.Error as error:
        if error.sqlstate != CLAIM_LOST:
            raise
        return 0
    return 1


def test_claim__one_per_person_earliest_first(database_url: str) -> None:
    bot, _, _ = insert_bot(database_url)
    enqueue(database_url, bot, [(1, 10, "a1"), (2, 20, "b1"), (3, 10, "a2"), (4, 20, "b2")])
    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as conn:
        first = claim(conn, 10)
        assert sorted(r["update_id"] for r in first) == [1, 2]
        assert {r["attempt"] for r in first} == {1}
        # Both people have one in hand: nothing more to take.
        assert claim(conn, 10) == []
        assert finish(conn, next(r for r in first if r["update_id"] == 1)) == 1
        assert [r["update_id"] for r in claim(conn, 10)] == [3]


def test_claim__own_bots_first_others_fresh_left_to_their_sender_any_once_waited(
    database_url: str,
) -> None:
    mine, _, _ = insert_bot(database_url, 5550101)
    theirs, _, _ = insert_bot(database_url, 5550102)
    # Another worker's bot's updates arrived first.
    enqueue(database_url, theirs, [(n, 100 + n, "t") for n in range(1, 5)])
    enqueue(database_url, mine, [(n, 200 + n, "m") for n in range(1, 5)])
    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as conn:
        first = claim(conn, 4, own=[mine])
        assert {r["bot_id"] for r in first} == {mine}
        # Without a preference, arrival order.
        assert {r["bot_id"] for r in claim(conn, 2)} == {theirs}
        # Once claimable for longer than AFFINITY_SECONDS, the others' come first again: none
        # waits for ever behind a busy worker's own.
        enqueue(database_url, mine, [(n, 300 + n, "m") for n in range(5, 9)])
        conn.execute(
            "UPDATE inbox SET available_at = now() - make_interval(secs => %s)"
            " WHERE bot_id = %s AND state = 'waiting'",
            (AFFINITY_SECONDS * 2, theirs),
        )
        assert {r["bot_id"] for r in claim(conn, 2, own=[mine])} == {theirs}
        assert {r["bot_id"] for r in claim(conn, 4, own=[mine])} == {mine}
        # A fresh update of a bot another worker sends for is left to that worker, until it
        # has waited AFFINITY_SECONDS.
        conn.execute(
            "INSERT INTO leases (name, holder, term, expires_at, acquired_at)"
            " VALUES (%s, 'another worker', 1, now() + interval '30 seconds', now())",
            (f"send:{theirs}",),
        )
        enqueue(database_url, theirs, [(9, 109, "t")])
        assert claim(conn, 4, own=[mine]) == []
        conn.execute(
            "UPDATE inbox SET available_at = now() - make_interval(secs => %s)"
            " WHERE bot_id = %s AND state = 'waiting'",
            (AFFINITY_SECONDS * 2, theirs),
        )
        assert [r["update_id"] for r in claim(conn, 4, own=[mine])] == [9]


def test_claim__expired_lock_comes_back_and_old_token_is_fenced(database_url: str) -> None:
    bot, _, _ = insert_bot(database_url)
    enqueue(database_url, bot, [(1, 10, "a1"), (2, 10, "a2")])
    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as conn:
        (stale,) = claim(conn, 5)
        assert claim(conn, 5) == []
        # The lock runs out (by the database's clock, which every worker's claim reads).
        conn.execute(
            "UPDATE inbox SET locked_until = now() - interval '1 millisecond' WHERE id = %s",
            (stale["id"],),
        )
        (again,) = claim(conn, 5)
        assert again["id"] == stale["id"]
        assert again["attempt"] == 2
        assert again["lock_token"] != stale["lock_token"]
        # The worker that lost its claim cannot finish, retry or bury the row.
        assert finish(conn, stale) == 0
        with conn.transaction():
            retried = conn.execute(
                Q["retry_update"],
                {
                    "id": stale["id"],
                    "lock_token": stale["lock_token"],
                    "attempt": stale["attempt"],
                    "delay": 0,
                    "error": "x",
                    "give_back": 0,
                },
            ).rowcount
        assert retried == 0
        assert finish(conn, again) == 1


def test_claim__unique_index_refuses_two_in_hand_for_one_person(database_url: str) -> None:
    bot, _, _ = insert_bot(database_url)
    enqueue(database_url, bot, [(1, 10, "a1"), (2, 10, "a2")])
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "UPDATE inbox SET state = 'processing', lock_token = gen_random_uuid(),"
            " locked_until = now() + interval '1 minute' WHERE update_id = 1"
        )
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(
                "UPDATE inbox SET state = 'processing', lock_token = gen_random_uuid(),"
                " locked_until = now() + interval '1 minute' WHERE update_id = 2"
            )


def test_claim__concurrent_claimers_keep_each_person_in_order(database_url: str) -> None:
    bot, _, _ = insert_bot(database_url)
    people, per_person = 60, 6
    updates = [
        (n * people + p + 1, 1000 + p, f"{p}:{n}") for n in range(per_person) for p in range(people)
    ]
    enqueue(database_url, bot, updates)
    handled: dict[int, list[int]] = defaultdict(list)
    in_hand: set[int] = set()
    violations: list[int] = []

    async def claimer() -> None:
        conn = await psycopg.AsyncConnection.connect(database_url, row_factory=dict_row)
        async with conn:
            idle = 0
            while idle < 5:
                async with conn.transaction():
                    cur = await conn.execute(Q["claim_updates"], params(8))
                    rows = await cur.fetchall()
                if not rows:
                    idle += 1
                    await asyncio.sleep(0.01)
                    continue
                idle = 0
                for row in rows:
                    if row["chat_key"] in in_hand:
                        violations.append(row["chat_key"])
                    in_hand.add(row["chat_key"])
                await asyncio.sleep(0.001)
                for row in rows:
                    handled[row["chat_key"]].append(row["update_id"])
                    in_hand.discard(row["chat_key"])
                    async with conn.transaction():
                        await conn.execute(Q["finish_with_replies"], finished(row))

    async def main() -> None:
        await asyncio.gather(*(claimer() for _ in range(8)))

    asyncio.run(main())
    assert violations == []
    assert len(handled) == people
    for person, ids in handled.items():
        assert ids == sorted(ids), person
        assert len(ids) == per_person


def test_claim__plan_uses_the_partial_indexes(database_url: str) -> None:
    bot, _, _ = insert_bot(database_url)
    with psycopg.connect(database_url) as conn:
        # Enough rows, mostly finished, that a sequential scan would be the wrong plan.
        conn.execute(
            "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload, state, done_at)"
            "  SELECT %s, g, g %% 5000, 'message', '{}', 'done', now()"
            " FROM generate_series(1, 60000) g",
            (bot,),
        )
        conn.execute(
            "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload)"
            " SELECT %s, 100000 + g, g %% 300, 'message', '{}' FROM generate_series(1, 2000) g",
            (bot,),
        )
        conn.execute("ANALYZE inbox")
        # In the claim's transaction, with its plan pinned, as a worker runs it.
        conn.execute(Q["claim_plan"])
        plan = conn.execute(
            "EXPLAIN (FORMAT JSON) " + Q["claim_updates"],
            params(32, own=[bot]),
        ).fetchone()
        assert plan is not None
        text = json.dumps(plan[0])
    for index in ("inbox_waiting", "inbox_unfinished_by_person", "inbox_claim_expiry"):
        assert index in text, f"the claim no longer uses {index}"
    scans = [
        node
        for node in _nodes(plan[0][0]["Plan"])
        if node.get("Node Type") == "Seq Scan" and node.get("Relation Name") == "inbox"
    ]
    assert scans == []


def test_claim__cost_does_not_grow_with_the_backlog_when_statistics_predate_it(
    database_url: str,
) -> None:
    """A queue's statistics lag its backlog: the planner believes little is waiting. The
    claim must still read about as many pages with 20,000 waiting as with 2,000."""
    bot, _, _ = insert_bot(database_url)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE inbox SET (autovacuum_enabled = false)")

        def wait(first: int, last: int) -> None:
            conn.execute(
                "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload)"
                " SELECT %s, g, g, 'message', '{}' FROM generate_series(%s::int, %s::int) g",
                (bot, first, last),
            )
            # Half claimed and given back: their rows move, so the inbox is no longer stored
            # in id order (as a busy one is not), then vacuumed as autovacuum would.
            conn.execute(
                "UPDATE inbox SET state = 'processing', lock_token = gen_random_uuid(),"
                " locked_until = now() + interval '1 minute'"
                " WHERE update_id BETWEEN %s AND %s AND update_id %% 2 = 0",
                (first, last),
            )
            conn.execute(
                "UPDATE inbox SET state = 'waiting', lock_token = NULL, locked_until = NULL"
                " WHERE state = 'processing'"
            )
            conn.execute("VACUUM inbox")

        def pages_read() -> int:
            top = _claim_analyzed(conn, bot)
            return int(top["Shared Hit Blocks"]) + int(top["Shared Read Blocks"])

        # Statistics taken after a busy spell, with a few waiting.
        wait(1, 3000)
        conn.execute("UPDATE inbox SET state = 'done', done_at = now() WHERE update_id < 2950")
        conn.execute("VACUUM ANALYZE inbox")
        wait(3001, 5000)
        shallow = pages_read()
        wait(5001, 23000)
        deep = pages_read()
    assert deep <= shallow * 1.5, (shallow, deep)


def test_claim__claims_finished_since_the_last_vacuum_are_not_read(database_url: str) -> None:
    """Between two vacuums the in-hand indexes hold an entry for every claim finished since
    (a busy inbox finishes 200 a second). Looking for claims whose lease ran out must not
    visit them."""
    bot, _, _ = insert_bot(database_url)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE inbox SET (autovacuum_enabled = false)")
        conn.execute(
            "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload)"
            " SELECT %s, g, g, 'message', '{}' FROM generate_series(1, 20100) g",
            (bot,),
        )
        conn.execute("VACUUM ANALYZE inbox")
        # Claimed and finished, as workers do, with no vacuum since; one hundred still waiting.
        conn.execute(
            "UPDATE inbox SET state = 'processing', lock_token = gen_random_uuid(),"
            " locked_until = now() + interval '30 seconds' WHERE update_id > 100"
        )
        conn.execute(
            "UPDATE inbox SET state = 'done', done_at = now(), lock_token = NULL,"
            " locked_until = NULL WHERE update_id > 100"
        )
        top = _claim_analyzed(conn, bot)
    # The heads, then the claims whose lease ran out: none, found in a page or two (a bitmap
    # scan of inbox_one_in_hand read every page holding one of the 20,000: 1,275).
    [heads] = [node for node in _nodes(top) if node["Node Type"] == "Append"]
    expired = heads["Plans"][1]
    assert expired["Actual Rows"] == 0
    assert expired["Shared Hit Blocks"] + expired["Shared Read Blocks"] <= 5


def _claim_analyzed(conn: psycopg.Connection[Any], bot: int) -> dict[str, Any]:
    """The plan of a claim of 16 run (and rolled back) as a worker runs it, with what each
    step read; it must have claimed 16."""
    with conn.transaction(force_rollback=True):
        conn.execute(Q["claim_plan"])
        found = conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + Q["claim_updates"],
            params(16, own=[bot]),
        ).fetchone()
    assert found is not None
    top: dict[str, Any] = found[0][0]["Plan"]
    assert top["Actual Rows"] == 16
    return top


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node]
    for child in node.get("Plans", []):
        found.extend(_nodes(child))
    return found


def test_lease__one_holder_then_takeover_after_expiry(database_url: str) -> None:
    def take(conn: psycopg.Connection[Any], holder: str, ttl: float) -> Any:
        with conn.transaction():
            return conn.execute(
                Q["take_lease"], {"name": "send:1", "holder": holder, "ttl": ttl}
            ).fetchone()

    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as conn:
        # Both present, as a worker is before it asks for a bot's lease.
        for holder in ("a", "b"):
            conn.execute(Q["take_lease"], {"name": f"worker:{holder}", "holder": holder, "ttl": 60})
        first = take(conn, "a", 30)
        assert first is not None and first["taken"] and first["term"] == 1
        assert take(conn, "b", 30) is None
        renewed = take(conn, "a", 30)
        assert renewed is not None and not renewed["taken"] and renewed["term"] == 1
        # a's lease runs out without a renewal (by the database's clock).
        conn.execute(
            "UPDATE leases SET expires_at = now() - interval '1 millisecond' WHERE name = 'send:1'"
        )
        taken = take(conn, "b", 30)
        assert taken is not None and taken["taken"] and taken["term"] == 2
        assert take(conn, "a", 30) is None


def test_lease__a_holder_whose_presence_ran_out_loses_it_at_once(database_url: str) -> None:
    """A bot's lease runs 30 s, but a worker silent past its presence (killed, stalled) hands
    it over then; a present holder's lease is kept."""
    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as conn:

        def take(name: str, holder: str, ttl: float) -> Any:
            params = {"name": name, "holder": holder, "ttl": ttl}
            return conn.execute(Q["take_lease"], params).fetchone()

        assert take("worker:a", "a", 60)["taken"]
        assert take("worker:b", "b", 60)["taken"]
        assert take("send:1", "a", 30)["taken"]
        assert take("send:1", "b", 30) is None
        assert conn.execute(Q["workers_gone"], {"window": 60}).fetchall() == []
        # a falls silent: its presence ends (by the database's clock) and nothing renews it.
        conn.execute(
            "UPDATE leases SET expires_at = now() - interval '1 s' WHERE name = 'worker:a'"
        )
        assert [r["holder"] for r in conn.execute(Q["workers_gone"], {"window": 60})] == ["a"]
        gone = conn.execute(Q["leases_of_the_gone"], {"gone": ["a"]}).fetchall()
        assert [r["name"] for r in gone] == ["send:1"]
        taken = take("send:1", "b", 30)
        assert taken is not None and taken["taken"] and taken["term"] == 2
        # Back, a finds the lease held by a present worker: it is not a's again.
        assert take("worker:a", "a", 60) is not None
        assert take("send:1", "a", 30) is None


def test_consumer__a_claim_taken_over_before_commit_writes_nothing(
    database_url: str, open_pool: OpenPool
) -> None:
    """The finish fails inside the database when the claim is gone, so the pipelined COMMIT
    commits nothing: no reply, no person; the new holder's finish then writes both."""
    bot, _, _ = insert_bot(database_url)
    enqueue(database_url, bot, [(1, 10, "/start")])
    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as conn:
        (stale,) = claim(conn, 5, lock_seconds=0)
        (again,) = claim(conn, 5)
    assert (again["id"], again["attempt"]) == (stale["id"], 2)
    lost = ("botedge_updates_handled_total", {"outcome": "lost"})
    lost_before = REGISTRY.get_sample_value(*lost) or 0.0

    async def handle(row: dict[str, Any]) -> None:
        async with open_pool() as pool:
            consumer = InboxConsumer(
                pool, BotLogic(), Notifier(pool), asyncio.Event(), ConsumerConfig()
            )
            await consumer.handle(InboxRow.from_row(row))
            await consumer.notifier.close()

    def written() -> tuple[Any, ...]:
        with psycopg.connect(database_url) as conn:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM outbox), (SELECT count(*) FROM bot_people),"
                " (SELECT state FROM inbox WHERE id = %s)",
                (stale["id"],),
            ).fetchone()
        assert row is not None
        return tuple(row)

    asyncio.run(handle(stale))
    assert written() == (0, 0, "processing")
    assert REGISTRY.get_sample_value(*lost) == lost_before + 1
    asyncio.run(handle(again))
    assert written() == (1, 1, "done")


def test_retry__a_parked_update_gets_its_try_back_a_failed_one_does_not(
    database_url: str,
) -> None:
    bot, _, _ = insert_bot(database_url)
    enqueue(database_url, bot, [(1, 10, "a1")])
    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as conn:

        def retry_once(give_back: int) -> int:
            (row,) = claim(conn, 5)
            conn.execute(
                Q["retry_update"],
                {
                    "id": row["id"],
                    "lock_token": row["lock_token"],
                    "attempt": row["attempt"],
                    "delay": 0,
                    "error": "x",
                    "give_back": give_back,
                },
            )
            found = conn.execute("SELECT attempt FROM inbox WHERE id = %s", (row["id"],))
            return int(found.fetchone()["attempt"])  # type: ignore[index]

        # A failed try counts; a parked one (its breaker open, nothing tried) is given back.
        assert retry_once(0) == 1
        assert retry_once(1) == 1
        assert retry_once(0) == 2


def test_give_back__a_claim_whose_failure_was_not_recorded_is_claimable_at_once_if_still_ours(
    database_url: str,
) -> None:
    """The database was away when the update failed: once it answers, the worker gives the
    claim back (fenced by its token) instead of leaving it for WORKER_LOCK_SECONDS."""
    import uuid

    from botedge.inbox_store import give_back

    bot, _, _ = insert_bot(database_url)
    enqueue(database_url, bot, [(1, 10, "a1"), (2, 20, "b1")])
    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as conn:
        held = {r["id"]: r["lock_token"] for r in claim(conn, 10, lock_seconds=60)}
        assert claim(conn, 10) == []

    async def back(claims: dict[int, uuid.UUID]) -> int:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            return await give_back(conn, claims)

    first, second = sorted(held)
    # A token not its own (another worker took the update over meanwhile) gives nothing back.
    assert asyncio.run(back({first: uuid.uuid4()})) == 0
    assert asyncio.run(back({first: held[first]})) == 1
    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as conn:
        again = claim(conn, 10)
    assert [(r["id"], r["attempt"]) for r in again] == [(first, 2)]
    assert second not in {r["id"] for r in again}
