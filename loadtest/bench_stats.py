"""Statistics and broadcasts at size: a 30-day hourly series over 5 million events, and how fast a
broadcast fans out into the outbox.

    make bench-stats           # or: python loadtest/bench_stats.py --events 5000000

Starts a throwaway PostgreSQL (or uses BENCH_DATABASE_URL). Writes `--events` statistics events
of 20 bots spread over the last 30 days, rolls them up with botedge's roll-up and times the
panel's statistics queries for a 30-day hourly series (target: under 100 ms), then the same
with nothing rolled up. Then gives one bot `--people` people and times botedge's fan-out of a
broadcast to them with no sender draining it (target: far above the 25 messages a second a
bot may send, so the send limit is the bottleneck, not the fan-out).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "loadtest"))

from benchdb import bench_database  # noqa: E402

from botedge.broadcasts import FanOut  # noqa: E402
from botedge.rollup import roll_up  # noqa: E402
from panel_api.store import Q as PANEL  # noqa: E402
from shared.db import create_pool  # noqa: E402
from shared.listen import Notifier  # noqa: E402
from shared.settings import CommonSettings, Reader  # noqa: E402

BOTS = 20


def seed(url: str, events: int) -> None:
    with psycopg.connect(url) as conn:
        conn.execute(
            "INSERT INTO bots (telegram_bot_id, username, token_encrypted,"
            " webhook_secret_encrypted) SELECT 9100000 + n, 'bench' || n, 'x', 'x'"
            " FROM generate_series(1, %s) n",
            (BOTS,),
        )
        conn.execute(
            "INSERT INTO workspace (name, time_zone) VALUES ('Bench', 'Asia/Tehran')"
            " ON CONFLICT (id) DO UPDATE SET time_zone = excluded.time_zone"
        )
        conn.execute(
            "INSERT INTO stat_events (at, kind, bot_id, content_id)"
            " SELECT now() - random() * interval '30 days',"
            " (ARRAY['start', 'gate_shown', 'gate_passed', 'content_delivered'])[1 + n %% 4],"
            " 1 + n %% %s, CASE WHEN n %% 4 > 0 THEN 1 + n %% 50 END"
            " FROM generate_series(1, %s) n",
            (BOTS, events),
        )
        conn.execute("ANALYZE stat_events")


def series_times(url: str, runs: int) -> list[float]:
    params: dict[str, Any] = {
        "to": dt.date.today(),
        "from": dt.date.today() - dt.timedelta(days=29),
        "granularity": "hour",
        "bot_id": None,
        "content_id": None,
        "campaign_id": None,
        "now": dt.datetime.now(dt.UTC),
    }
    took = []
    with psycopg.connect(url, row_factory=dict_row) as conn:
        for _ in range(runs):
            started = time.perf_counter()
            conn.execute(PANEL["stats_slots"], params).fetchall()
            bounds = conn.execute(PANEL["stats_bounds"], params).fetchone() or {}
            rows = conn.execute(PANEL["stats_counts"], {**params, **bounds}).fetchall()
            conn.execute(PANEL["stats_campaigns"], params).fetchall()
            took.append((time.perf_counter() - started) * 1000)
    if not rows:
        raise SystemExit("the series came back empty")
    return took


def pool_for(url: str) -> Any:
    return create_pool(CommonSettings.read(Reader({"DATABASE_URL": url}), "bench", 1))


async def rolled(url: str) -> tuple[int, float]:
    pool = pool_for(url)
    await pool.open(wait=True)
    try:
        started, hours = time.perf_counter(), 0
        while closed := await roll_up(pool, dt.datetime.now(dt.UTC), keep_days=3650):
            hours += closed
        return hours, time.perf_counter() - started
    finally:
        await pool.close()


async def fanned(url: str, people: int) -> float:
    with psycopg.connect(url) as conn:
        conn.execute(
            "WITH p AS (INSERT INTO people (telegram_user_id)"
            " SELECT 700000000 + n FROM generate_series(1, %s) n RETURNING id)"
            " INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at)"
            " SELECT 1, id, now(), now() FROM p",
            (people,),
        )
        [(broadcast,)] = conn.execute(
            "INSERT INTO broadcasts (bot_id, text) VALUES (1, 'Bench') RETURNING id"
        ).fetchall()
    pool = pool_for(url)
    await pool.open(wait=True)
    stopping = asyncio.Event()
    # A window the whole fan-out fits in: nothing drains it here.
    fan_out = FanOut(pool, Notifier(pool), "bench", poll_interval=0.05, window=2 * people)
    started = time.perf_counter()
    task = asyncio.create_task(fan_out.run(stopping))
    try:
        while True:
            async with pool.connection() as conn:
                cur = await conn.execute("SELECT state FROM broadcasts WHERE id = %s", (broadcast,))
                row = await cur.fetchone()
            if row and row["state"] == "sending":
                return time.perf_counter() - started
            await asyncio.sleep(0.01)
    finally:
        stopping.set()
        await task
        await pool.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--people", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    with bench_database({}) as url:
        started = time.perf_counter()
        seed(url, args.events)
        print(
            f"{args.events:,} events of {BOTS} bots over 30 days written in"
            f" {time.perf_counter() - started:.1f} s"
        )
        live = series_times(url, 1)
        print(f"30-day hourly series, nothing rolled up: median {statistics.median(live):.0f} ms")
        hours, took = asyncio.run(rolled(url))
        print(f"roll-up: {hours} hours closed in {took:.1f} s")
        with psycopg.connect(url, autocommit=True) as conn:
            # What autovacuum does soon after a table grows; done here at once.
            conn.execute("VACUUM ANALYZE stat_hours")
        times = series_times(url, args.runs)
        p95 = sorted(times)[int(0.95 * (len(times) - 1))]
        verdict = "met" if p95 < 100 else "NOT met"
        print(
            f"30-day hourly series over the roll-up: median {statistics.median(times):.1f} ms,"
            f" p95 {p95:.1f} ms in {args.runs} runs (target under 100 ms: {verdict})"
        )
        took = asyncio.run(fanned(url, args.people))
        rate = args.people / took
        print(
            f"fan-out: {args.people:,} people queued in {took:.1f} s, {rate:,.0f} a second"
            f" ({rate / 25:,.0f} times a bot's 25 messages a second)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
