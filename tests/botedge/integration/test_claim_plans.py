"""The outbox read and the access-event claim find their rows through their partial indexes,
however much finished history the tables hold (as the inbox claim's plan test pins its own);
marking rows sent finds them by id, however stale the pending indexes are."""

from __future__ import annotations

import json

import psycopg
from psycopg.rows import dict_row

from botedge.access import ACCESS_EVENTS
from botedge.events import EventQueue
from botedge.sqlq import Q
from tests.botedge.conftest import insert_bot
from tests.conftest import scans_of


def test_outbox_read__plan_uses_the_pending_index(database_url: str) -> None:
    bot, _, _ = insert_bot(database_url)
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        # Mostly sent, a few waiting: a sequential scan would be the wrong plan.
        conn.execute(
            "INSERT INTO outbox (bot_id, chat_id, method, payload, dedupe_key, state, sent_at)"
            " SELECT %s, g %% 5000, 'sendMessage', '{}', 'sent:' || g,"
            " CASE WHEN g %% 30 = 0 THEN 'pending' ELSE 'sent' END,"
            " CASE WHEN g %% 30 = 0 THEN NULL ELSE now() END FROM generate_series(1, 60000) g",
            (bot,),
        )
        conn.execute("ANALYZE outbox")
        plan = conn.execute(
            "EXPLAIN (FORMAT JSON) " + Q["pending_outbox"],
            {"bot_id": bot, "after_priority": -1, "after_id": 0, "limit": 500},
        ).fetchone()
    assert plan is not None
    text = json.dumps(plan["QUERY PLAN"])
    assert "outbox_pending" in text, "the read no longer uses outbox_pending"
    assert "Seq Scan" not in scans_of(plan["QUERY PLAN"][0]["Plan"], "outbox")


def test_mark_sent__rows_found_by_id_not_through_a_pending_index(database_url: str) -> None:
    """Between two vacuums a pending partial index holds thousands of rows already sent; the
    statistics say few are pending. Marking sent rows must still go straight to them."""
    bot, _, _ = insert_bot(database_url)
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("ALTER TABLE outbox SET (autovacuum_enabled = off)")
        conn.execute(
            "INSERT INTO outbox (bot_id, chat_id, method, payload, dedupe_key, state)"
            " SELECT %s, g, 'sendMessage', '{}', 'k' || g,"
            " CASE WHEN g > 19995 THEN 'pending' ELSE 'sent' END FROM generate_series(1, 20000) g",
            (bot,),
        )
        conn.execute("VACUUM ANALYZE outbox")
        # Sent since the last vacuum: still in the pending indexes.
        conn.execute(
            "INSERT INTO outbox (bot_id, chat_id, method, payload, dedupe_key)"
            " SELECT %s, g, 'sendMessage', '{}', 'k' || g FROM generate_series(20001, 24000) g",
            (bot,),
        )
        conn.execute("UPDATE outbox SET state = 'sent' WHERE id BETWEEN 20001 AND 23997")
        statement = (
            Q["mark_sent_many"]
            .replace("%(ids)s", "$1")
            .replace("%(message_ids)s", "$2")
            .replace("%(now)s", "$3")
        )
        conn.execute("PREPARE mark(bigint[], bigint[], timestamptz) AS " + statement)
        # The plan a worker's prepared statement gets after its first executions.
        conn.execute("SET plan_cache_mode = force_generic_plan")
        plan = conn.execute(
            "EXPLAIN (FORMAT JSON) EXECUTE mark(ARRAY[23999]::bigint[], ARRAY[1]::bigint[], now())"
        ).fetchone()
    assert plan is not None
    text = json.dumps(plan["QUERY PLAN"])
    assert "outbox_pkey" in text
    assert "outbox_pending" not in text


def test_access_event_claim__plan_uses_the_claimable_index(database_url: str) -> None:
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        channel = conn.execute(
            "INSERT INTO channels (telegram_chat_id, is_paid) VALUES (-1, true) RETURNING id"
        ).fetchone()
        assert channel is not None
        conn.execute(
            "INSERT INTO people (telegram_user_id) SELECT g FROM generate_series(1, 30000) g"
        )
        conn.execute(
            "INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,"
            " updated_at) SELECT id, %s, 'expired', now(), 0, now() FROM people",
            (channel["id"],),
        )
        # Two events a membership, each with its history row; one in thirty still to do.
        conn.execute(
            "INSERT INTO membership_events (person_id, channel_id, to_status, new_expires_at,"
            " cause, at) SELECT person_id, channel_id, 'expired', now(), 'sweep', now()"
            " FROM memberships, generate_series(1, 2)"
        )
        conn.execute(
            "INSERT INTO access_events (kind, person_id, channel_id, membership_event_id,"
            " expires_at, created_at, state, done_at)"
            " SELECT 'revoke', person_id, channel_id, id, now(), now(),"
            " CASE WHEN id % 30 = 0 THEN 'pending' ELSE 'done' END,"
            " CASE WHEN id % 30 = 0 THEN NULL ELSE now() END FROM membership_events"
        )
        conn.execute("ANALYZE")
        claim = EventQueue(None, ACCESS_EVENTS)._claim  # type: ignore[arg-type]
        plan = conn.execute(
            psycopg.sql.SQL("EXPLAIN (FORMAT JSON) ") + claim, {"limit": 10, "lease": 60}
        ).fetchone()
    assert plan is not None
    text = json.dumps(plan["QUERY PLAN"])
    assert "access_events_claimable" in text, "the claim no longer uses access_events_claimable"
    assert "Seq Scan" not in scans_of(plan["QUERY PLAN"][0]["Plan"], "access_events")
