"""`python -m billing sweep`, the cron stand-in, as a real process against real billing."""

from __future__ import annotations

import datetime as dt
import signal
import subprocess
import sys
from pathlib import Path

import psycopg

from tests.billing.e2e import gateways
from tests.conftest import ROOT, Serve, serve_billing, service_env, wait_until


def test_sweep_command__works_through_the_backlog_in_bounded_calls(
    serve: Serve, database_url: str
) -> None:
    billing = serve_billing(serve, database_url, SWEEP_BATCH="3")
    channel = gateways.add_paid_channel(database_url)
    past = dt.datetime.now(dt.UTC) - dt.timedelta(days=30)
    for user in range(7):
        gateways.set_membership(database_url, 300 + user, channel, past)
    result = subprocess.run(
        [sys.executable, "-m", "billing", "sweep"],
        env=service_env(database_url, BILLING_URL=billing.url),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "7 examined, 0 to grace, 7 to expired in 3 calls" in result.stderr
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT DISTINCT status FROM memberships").fetchall() == [("expired",)]


def test_sweep_command__fails_loudly_when_billing_is_unreachable(database_url: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "billing", "sweep"],
        env=service_env(database_url, BILLING_URL="http://127.0.0.1:9"),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 1
    assert "sweep failed" in result.stderr


def test_sweep_every__repeats_and_stops_on_sigterm(
    serve: Serve, database_url: str, tmp_path: Path
) -> None:
    billing = serve_billing(serve, database_url)
    log = tmp_path / "sweep.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "billing", "sweep", "--every", "0.2"],
            env=service_env(database_url, BILLING_URL=billing.url),
            stderr=out,
            text=True,
            cwd=ROOT,
        )
    wait_until(lambda: log.read_text().count("swept:") >= 3, 20, "three sweep rounds")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert log.read_text().count("swept:") >= 3
