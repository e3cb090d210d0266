"""`python -m shared.backup`: a backup taken while payments keep arriving restores into an empty
database, and there the ledger replays to the memberships it holds."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg.rows import dict_row

from billing import reconcile
from shared import backup
from shared.tls import verified
from tests.billing.e2e import gateways
from tests.conftest import ROOT, Serve, serve_billing, wait_until


def count(url: str, sql: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(sql).fetchone()
    assert row is not None
    return int(row[0])


async def differences(url: str) -> tuple[int, list[reconcile.Difference]]:
    async with await psycopg.AsyncConnection.connect(url, row_factory=dict_row) as conn:
        return await reconcile.ledger(conn, dt.datetime.now(dt.UTC))


@pytest.mark.slow(4)
def test_backup_under_load__restores_and_the_ledger_replays_to_the_same_state(
    serve: Serve, database_url: str, empty_database_url: str, tmp_path: Path
) -> None:
    billing = serve_billing(serve, database_url)
    channel = gateways.add_paid_channel(database_url)
    stop = threading.Event()
    sent = [0]

    def pay() -> None:
        with httpx.Client(timeout=30, verify=verified()) as client:
            person = 7000
            while not stop.is_set():
                person += 1
                order = gateways.create_invoice(client, billing.url, person, channel, "subgate")
                for n in range(2):  # a renewal, so a replay has more than one payment to add
                    delivery = gateways.subgate(order["order_reference"], f"p{person}-{n}", "12.50")
                    assert delivery.send(client, billing.url).status_code == 200
                sent[0] += 1

    payer = threading.Thread(target=pay)
    payer.start()
    try:
        payments = "SELECT count(*) FROM payments"
        wait_until(lambda: count(database_url, payments) >= 20, 60, "payments arriving")
        before = count(database_url, payments)
        dumped = backup.dump(database_url, tmp_path / "under-load.dump")
        after = count(database_url, payments)
    finally:
        stop.set()
        payer.join()
    # Payments kept arriving while it was taken.
    assert after > before

    backup.restore(dumped, empty_database_url)
    restored = count(empty_database_url, payments)
    assert before <= restored <= after
    checked, found = asyncio.run(differences(empty_database_url))
    assert checked == count(empty_database_url, "SELECT count(*) FROM memberships") > 0
    assert found == []
    # The restored database is the same schema: every migration, none to apply.
    versions = "SELECT count(*) FROM schema_migrations"
    assert count(empty_database_url, versions) == count(database_url, versions)

    # A second restore into the now full database is refused and changes nothing.
    with pytest.raises(backup.BackupError, match="restore into an empty one"):
        backup.restore(dumped, empty_database_url)
    assert count(empty_database_url, payments) == restored


def test_backup_command__dumps_and_refuses_to_restore_over_data(
    database_url: str, tmp_path: Path
) -> None:
    env = {**os.environ, "DATABASE_URL": database_url}
    target = tmp_path / "one.dump"
    cmd = [sys.executable, "-m", "shared.backup"]
    made = subprocess.run([*cmd, "dump", str(target)], env=env, cwd=ROOT, capture_output=True)
    assert made.returncode == 0, made.stderr
    assert target.stat().st_size > 0
    again = subprocess.run(
        [*cmd, "restore", str(target)], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert again.returncode == 1
    assert "restore into an empty one" in again.stderr
    # The password went to pg_dump in its environment, never into what it printed.
    password = psycopg.conninfo.conninfo_to_dict(database_url).get("password")
    assert not password or str(password) not in made.stdout.decode() + again.stderr
