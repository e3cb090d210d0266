"""`python -m botedge prune`: old handled rows go, everything still in play stays."""

from __future__ import annotations

import subprocess
import sys

import psycopg
import pytest

from tests.botedge.conftest import enqueue, insert_bot, queue_messages
from tests.conftest import ROOT, service_env


def prune(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "botedge", "prune", *args],
        env=service_env(database_url),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


@pytest.mark.process
def test_prune__only_old_finished_rows(database_url: str) -> None:
    bot, _, _ = insert_bot(database_url)
    enqueue(database_url, bot, [(n, 10 + n % 4, f"m{n}") for n in range(1, 9)])
    queue_messages(database_url, bot, [(10, "a"), (11, "b"), (12, "c")])
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "UPDATE inbox SET state = 'done', done_at = now() - interval '10 days'"
            " WHERE update_id IN (1, 2)"
        )
        conn.execute("UPDATE inbox SET state = 'done', done_at = now() WHERE update_id = 3")
        conn.execute(
            "UPDATE inbox SET state = 'dead', done_at = now() - interval '10 days'"
            " WHERE update_id = 4"
        )
        conn.execute(
            "UPDATE outbox SET state = 'sent', sent_at = now() - interval '10 days'"
            " WHERE payload->>'text' = 'a'"
        )
        # Booking steps: expired long ago, expired yesterday (still worth "expired"), live.
        conn.execute(
            "WITH p AS (INSERT INTO people (telegram_user_id) VALUES (901), (902), (903)"
            " RETURNING id, telegram_user_id)"
            " INSERT INTO conversations (bot_id, person_id, step, expires_at, updated_at)"
            " SELECT %s, id, 'ad', now() + (telegram_user_id - 902) * interval '9 days', now()"
            " FROM p",
            (bot,),
        )
    assert prune(database_url, "--days", "1").returncode == 2
    result = prune(database_url)
    assert result.returncode == 0, result.stderr
    assert "deleted 2 handled updates, 1 finished sends and 1 expired conversations" in (
        result.stdout
    )
    with psycopg.connect(database_url) as conn:
        steps = conn.execute(
            "SELECT p.telegram_user_id FROM conversations c JOIN people p ON p.id = c.person_id"
            " ORDER BY 1"
        ).fetchall()
        assert [r[0] for r in steps] == [902, 903]
        left = [r[0] for r in conn.execute("SELECT update_id FROM inbox ORDER BY 1")]
        sends = [r[0] for r in conn.execute("SELECT payload->>'text' FROM outbox ORDER BY 1")]
    assert left == [3, 4, 5, 6, 7, 8]
    assert sends == ["b", "c"]
