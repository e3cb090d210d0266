"""The expiry sweep over many memberships: how many decisions a second.

    make bench-sweep           # or: python loadtest/bench_sweep.py --memberships 100000

Starts a throwaway PostgreSQL (or uses BENCH_DATABASE_URL) and one billing process. Writes
`--memberships` memberships of one paid channel, all due: a third past their expiry (to grace),
a third past their grace (to expired), a third 20 hours before expiry (an expiry notice). Then
calls `POST /v1/sweep` until it answers `more: false`, as cron would back to back, and prints
the memberships decided per second, with the machine it ran on.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "loadtest"))

from benchdb import bench_database  # noqa: E402

from shared.embedded_pg import free_port  # noqa: E402

SWEEP_TOKEN = "bench-sweep-token-0123456789"  # noqa: S105 - a throwaway database


def seed(database_url: str, count: int) -> None:
    with psycopg.connect(database_url) as conn:
        [(channel,)] = conn.execute(
            "INSERT INTO channels (telegram_chat_id, title, is_paid)"
            " VALUES (-1008000000001, 'Bench', true) RETURNING id"
        ).fetchall()
        conn.execute(
            "INSERT INTO plans (channel_id, price_minor, currency, period_days, grace_days,"
            " is_default) VALUES (%s, 500, 'USD', 30, 3, true)",
            (channel,),
        )
        conn.execute(
            "INSERT INTO people (telegram_user_id) SELECT 800000000 + n"
            " FROM generate_series(1, %s) n",
            (count,),
        )
        # Thirds: to grace, to expired, an expiry notice; all due now.
        conn.execute(
            "INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,"
            " next_check_at, updated_at)"
            " SELECT id, %s, 'active', now() + CASE id %% 3"
            "   WHEN 0 THEN interval '-1 day' WHEN 1 THEN interval '-5 days'"
            "   ELSE interval '20 hours' END,"
            " 3, now() - interval '1 minute', now() FROM people",
            (channel,),
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memberships", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=5_000, help="SWEEP_BATCH")
    args = parser.parse_args()
    with bench_database({}) as database_url:
        seed(database_url, args.memberships)
        port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "SWEEP_TOKEN": SWEEP_TOKEN,
            "SERVICE_TOKEN": "bench-service-token-0123456789",
            "SWEEP_BATCH": str(args.batch),
            "PORT": str(port),
            "LOG_LEVEL": "WARNING",
        }
        billing = subprocess.Popen([sys.executable, "-m", "billing"], env=env)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
            totals = {"examined": 0, "to_grace": 0, "to_expired": 0, "reminded": 0, "calls": 0}
            started = time.perf_counter()
            with httpx.Client(timeout=120) as client:
                while True:
                    answer = client.post(
                        f"{base}/v1/sweep", headers={"Authorization": f"Bearer {SWEEP_TOKEN}"}
                    ).json()
                    totals["calls"] += 1
                    for key in ("examined", "to_grace", "to_expired", "reminded"):
                        totals[key] += int(answer[key])
                    if not answer["more"]:
                        break
            elapsed = time.perf_counter() - started
        finally:
            billing.terminate()
            billing.wait(timeout=30)
    decided = totals["to_grace"] + totals["to_expired"] + totals["reminded"]
    print(
        f"{platform.machine()} {os.cpu_count()} CPUs, Python {platform.python_version()}",
        flush=True,
    )
    print(
        f"{totals['examined']} memberships examined in {totals['calls']} sweep calls,"
        f" {elapsed:.2f} s: {totals['examined'] / elapsed:,.0f} a second"
    )
    print(
        f"  to grace {totals['to_grace']}, to expired {totals['to_expired']},"
        f" reminded {totals['reminded']} ({decided} decisions)"
    )
    return 0 if decided == args.memberships else 1


if __name__ == "__main__":
    sys.exit(main())
