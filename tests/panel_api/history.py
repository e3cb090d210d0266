"""A month of made-up business written straight into the tables (`history.sql`), for the tests
of pages and lists that need every kind of row; the demo's own month is played through the
running system instead (`simulators.demo_month`)."""

from __future__ import annotations

from pathlib import Path

import psycopg

from panel_api import sqlq

HISTORY = (Path(__file__).parent / "history.sql").read_text(encoding="utf-8")


def seed_history(database_url: str) -> bool:
    """Once, into a database with no payments yet (after a bot and a paid channel exist); True
    when this call wrote it."""
    with psycopg.connect(database_url) as conn, conn.transaction():
        conn.execute(sqlq.Q["lock_seed"])
        if conn.execute("SELECT 1 FROM payments LIMIT 1").fetchone() is not None:
            return False
        # Several statements, no parameters: sent as one simple query.
        conn.execute(HISTORY, prepare=False)  # type: ignore[arg-type]
    return True
