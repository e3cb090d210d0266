"""Reconciliation of the ledger: a membership whose state is not its history's is found,
fixed under its lock with a `reconcile` history row, and a second run finds nothing; the
command line does the same against the running billing."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import httpx
import psycopg

from shared.testing import free_port
from shared.tls import verified
from tests.billing.e2e import gateways
from tests.conftest import SECRETS, Served

SERVICE = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}


def rows(database_url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]


def paid(client: httpx.Client, billing: Served, channel: int, user: int) -> None:
    order = gateways.create_invoice(client, billing.url, user, channel, "subgate")
    sent = gateways.subgate(order["order_reference"], f"pay-{user}", "12.50")
    assert sent.send(client, billing.url).json()["applied"] is True


def cli(billing: Served, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BILLING_URL": billing.url, "SERVICE_TOKEN": SECRETS["SERVICE_TOKEN"]}
    return subprocess.run(
        [sys.executable, "-m", "billing", "reconcile", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_reconcile__planted_differences_found_fixed_and_then_nothing(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url, price_minor=1250, currency="USD")
    with httpx.Client(timeout=30, verify=verified()) as client:
        for user in (9101, 9102, 9103):
            paid(client, billing, channel, user)
        [(right_9101,)] = rows(
            database_url,
            "SELECT m.expires_at FROM memberships m JOIN people p ON p.id = m.person_id"
            " WHERE p.telegram_user_id = 9101",
        )
        # Planted: ten days nobody paid for, and a paid member marked expired.
        rows(
            database_url,
            "UPDATE memberships m SET expires_at = expires_at + interval '10 days' FROM people p"
            " WHERE p.id = m.person_id AND p.telegram_user_id = 9101 RETURNING 1",
        )
        rows(
            database_url,
            "UPDATE memberships m SET status = 'expired', next_check_at = NULL FROM people p"
            " WHERE p.id = m.person_id AND p.telegram_user_id = 9102 RETURNING 1",
        )
        report = client.get(f"{billing.url}/internal/reconcile", headers=SERVICE).json()
        assert report["ledger"]["checked"] == 3
        found = {d["telegram_user_id"]: d for d in report["ledger"]["differences"]}
        assert sorted(found) == [9101, 9102]
        assert found[9101]["expected_expires_at"] == right_9101.isoformat()
        assert (found[9102]["status"], found[9102]["expected_status"]) == ("expired", "active")
        before = cli(billing)
        assert before.returncode == 1, before.stderr
        fixed = cli(billing, "--fix")
        assert fixed.returncode == 0, fixed.stderr
        after = client.get(f"{billing.url}/internal/reconcile", headers=SERVICE).json()
    assert after["ledger"]["differences"] == []
    assert cli(billing).returncode == 0
    assert rows(
        database_url,
        "SELECT p.telegram_user_id, e.from_status, e.to_status FROM membership_events e"
        " JOIN people p ON p.id = e.person_id WHERE e.cause = 'reconcile' ORDER BY 1",
    ) == [(9101, "active", "active"), (9102, "expired", "active")]
    # The member marked expired gets access back: a fresh invite.
    assert rows(
        database_url,
        "SELECT p.telegram_user_id FROM access_events a JOIN membership_events e"
        " ON e.id = a.membership_event_id JOIN people p ON p.id = a.person_id"
        " WHERE e.cause = 'reconcile' AND a.kind = 'grant'",
    ) == [(9102,)]


def test_reconcile__cli_exits_2_with_one_line_when_billing_does_not_answer() -> None:
    env = {
        **os.environ,
        "BILLING_URL": f"http://127.0.0.1:{free_port()}",
        "SERVICE_TOKEN": SECRETS["SERVICE_TOKEN"],
    }
    done = subprocess.run(
        [sys.executable, "-m", "billing", "reconcile"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("reconcile: billing at http://127.0.0.1:")
    assert "Traceback" not in done.stderr
