"""Sign-in timing: a known email with a wrong password beside an unknown email.

    make bench-login            # or: python loadtest/bench_login.py --rounds 40

Both paths make exactly one bcrypt check (cost 12), so their medians should match: a gap would
tell an attacker which emails have accounts. Serves panel-api on loopback over a throwaway
embedded PostgreSQL (or BENCH_DATABASE_URL) and prints the median and spread of each.
"""

from __future__ import annotations

import argparse
import os
import platform
import secrets
import statistics
import sys
import time
from pathlib import Path

import httpx
import psycopg
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "loadtest"))

from benchdb import bench_database  # noqa: E402

from panel_api.app import create_app  # noqa: E402
from panel_api.seed import seed  # noqa: E402
from panel_api.settings import load  # noqa: E402
from shared.testing import serve_in_thread  # noqa: E402

ENV = {
    "JWT_SECRET": secrets.token_urlsafe(32),
    "SERVICE_TOKEN": secrets.token_urlsafe(16),
    "BOT_TOKEN_KEY": Fernet.generate_key().decode(),
    "LOG_LEVEL": "WARNING",
}


def timed(client: httpx.Client, url: str, email: str, rounds: int) -> list[float]:
    timings = []
    for n in range(rounds):
        started = time.perf_counter()
        answer = client.post(
            f"{url}/v1/auth/login", json={"email": email, "password": f"wrong-{n}"}
        )
        timings.append(time.perf_counter() - started)
        if answer.status_code not in (401, 429):
            raise SystemExit(f"unexpected answer {answer.status_code}: {answer.text}")
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    with bench_database({}) as database_url:
        seed(database_url, "owner@example.com", "bench password 1")
        settings = load({**os.environ, **ENV, "DATABASE_URL": database_url})
        with serve_in_thread(create_app(settings)) as url, httpx.Client(timeout=30) as client:
            print(f"machine: {platform.machine()}, {os.cpu_count()} cores")
            print(f"sign-in with a wrong password, {args.rounds} rounds each (bcrypt cost 12):")
            for label, email in (("known email", "owner@example.com"), ("unknown email", "x@y.z")):
                timings = []
                for start in range(0, args.rounds, 9):
                    # Nine at a time, the throttle's window cleared between batches.
                    with psycopg.connect(database_url, autocommit=True) as conn:
                        conn.execute("DELETE FROM login_failures")
                    timings += timed(client, url, email, min(9, args.rounds - start))
                median = statistics.median(timings) * 1000
                spread = statistics.pstdev(timings) * 1000
                print(f"  {label:<14} median {median:.1f} ms, spread {spread:.1f} ms")


if __name__ == "__main__":
    main()
