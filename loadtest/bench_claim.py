"""How long the inbox claim takes with 1,000 and 1,000,000 waiting, statistics older than that.

    make bench-claim            # or: python loadtest/bench_claim.py --rounds 300

Starts a throwaway embedded PostgreSQL (or uses BENCH_DATABASE_URL, a role that may create a
database). For each depth it fills the inbox with waiting updates, ten per person, plus as many
finished ones, then times the claim of 32 updates as a worker makes it (one transaction, its
commit included) and puts the claimed updates back, untimed, so the depth stays put. It prints
p50, p99 and max per depth. The inbox's statistics are taken before the waiting updates come,
as a queue's are when its backlog grows faster than autovacuum looks (`--fresh-statistics`
takes them after).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "loadtest"))

from benchdb import bench_database  # noqa: E402

from botedge import sqlq  # noqa: E402


def fill(
    conn: psycopg.Connection[tuple[object, ...]], bot_id: int, waiting: int, fresh_statistics: bool
) -> None:
    conn.execute("TRUNCATE inbox")
    # As many finished updates as waiting ones: the claim must not care about history.
    conn.execute(
        "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload, state, done_at)"
        " SELECT %s, g, g / 10, 'message', '{}', 'done', now()"
        " FROM generate_series(1, %s) g",
        (bot_id, waiting),
    )
    # Statistics taken before the backlog came, as a queue's are when it grows faster than
    # autovacuum looks: the planner believes nothing is waiting.
    conn.execute("ALTER TABLE inbox SET (autovacuum_enabled = false)")
    conn.execute("VACUUM ANALYZE inbox")
    conn.execute(
        "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload)"
        " SELECT %s, %s + g, 10000000 + g / 10, 'message', '{}'"
        " FROM generate_series(1, %s) g",
        (bot_id, waiting, waiting),
    )
    if fresh_statistics:
        conn.execute("VACUUM ANALYZE inbox")
    # Timed from a settled disk: the fill's writes (or an earlier benchmark's) still going out
    # would otherwise land on the claims' commits.
    conn.execute("CHECKPOINT")
    os.sync()


def time_claims(
    conn: psycopg.Connection[tuple[object, ...]], rounds: int, own: list[int]
) -> list[float]:
    timings = []
    for _ in range(rounds):
        started = time.perf_counter()
        # As a worker claims: the plan's pin and the claim in one transaction, its commit
        # included.
        with conn.pipeline(), conn.transaction():
            conn.execute(sqlq.Q["claim_plan"])
            cur = conn.execute(
                sqlq.Q["claim_updates"],
                {"limit": 32, "lock_seconds": 60, "holder": "bench", "own": own, "fresh": 0.5},
            )
        rows = cur.fetchall()
        timings.append(time.perf_counter() - started)
        if len(rows) != 32:
            raise SystemExit(f"claimed {len(rows)}, expected 32")
        # Untimed: the claimed updates wait again, so the depth stays put.
        conn.execute(
            "UPDATE inbox SET state = 'waiting', attempt = 0, lock_token = NULL,"
            " locked_until = NULL, locked_by = NULL WHERE id = ANY(%s)",
            ([row[0] for row in rows],),
        )
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--depths", default="1000,1000000")
    parser.add_argument(
        "--own",
        action="store_true",
        help="claim as the worker that sends for the bot (its updates preferred)",
    )
    parser.add_argument(
        "--fresh-statistics",
        action="store_true",
        help="analyze the inbox once filled (by default its statistics predate the backlog)",
    )
    args = parser.parse_args()
    with bench_database({"shared_buffers": "256MB", "max_wal_size": "4GB"}) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            bot = conn.execute(
                "INSERT INTO bots (telegram_bot_id, token_encrypted, webhook_secret_encrypted)"
                " VALUES (1, 'x', 'x') RETURNING id"
            ).fetchone()
            if bot is None:
                raise SystemExit("could not insert the benchmark bot")
            print(f"machine: {platform.machine()}, {os.cpu_count()} cores")
            print(f"claim of 32 updates, {args.rounds} rounds per depth:")
            for depth in (int(d) for d in args.depths.split(",")):
                filled = time.perf_counter()
                fill(conn, int(bot[0]), depth, args.fresh_statistics)
                fill_seconds = time.perf_counter() - filled
                own = [int(bot[0])] if args.own else []
                timings = sorted(time_claims(conn, args.rounds, own))
                p50 = statistics.median(timings) * 1000
                p99 = timings[int(len(timings) * 0.99) - 1] * 1000
                print(
                    f"  {depth:>9,} waiting: p50 {p50:.2f} ms, p99 {p99:.2f} ms,"
                    f" max {timings[-1] * 1000:.2f} ms (filled in {fill_seconds:.0f} s)"
                )


if __name__ == "__main__":
    main()
