"""The sweep finds due memberships through its partial index, however many there are."""

from __future__ import annotations

import json

import psycopg

from billing import sqlq


def test_due_memberships__uses_the_partial_index(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        channel = conn.execute(
            "INSERT INTO channels (telegram_chat_id, is_paid) VALUES (-1, true) RETURNING id"
        ).fetchone()
        assert channel is not None
        conn.execute(
            "INSERT INTO people (telegram_user_id) SELECT g FROM generate_series(1, 50000) g"
        )
        # Mostly expired (nothing to decide), a few active.
        conn.execute(
            "INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,"
            " next_check_at, updated_at)"
            " SELECT id, %s, CASE WHEN id %% 50 = 0 THEN 'active' ELSE 'expired' END,"
            " now() - interval '1 day', 3,"
            " CASE WHEN id %% 50 = 0 THEN now() - interval '1 day' END, now() FROM people",
            (channel[0],),
        )
        conn.execute("ANALYZE memberships")
        plan = conn.execute(
            "EXPLAIN (FORMAT JSON) " + sqlq.Q["due_memberships"],
            {"now": "now", "limit": 500},
        ).fetchone()
    assert plan is not None
    text = json.dumps(plan[0])
    assert "memberships_due" in text
    assert '"Seq Scan"' not in text
