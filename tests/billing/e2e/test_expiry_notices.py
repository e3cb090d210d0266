"""Reminders before expiry: one 72-hour and one 24-hour notice per membership period, however
many sweeps run at once, and none for a period a renewal has replaced."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg
import pytest

from billing.app import create_app
from billing.settings import load
from shared.clock import ManualClock
from shared.testing import serve_in_thread
from shared.tls import verified
from tests.billing.e2e import gateways
from tests.conftest import HTTP, service_env

H = dt.timedelta(hours=1)
# More than one sweep call takes (SWEEP_BATCH, 500): two at once each take a part.
MEMBERS = 1200


@dataclass
class Billing:
    url: str
    clock: ManualClock
    database_url: str

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.database_url) as conn:
            return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]

    def sweeps_at_once(self) -> list[dict[str, Any]]:
        def one(_: int) -> dict[str, Any]:
            answer = HTTP.post(f"{self.url}/v1/sweep", headers=gateways.sweep_request(), timeout=60)
            assert answer.status_code == 200, answer.text
            return dict(answer.json())

        with ThreadPoolExecutor(2) as pool:
            return list(pool.map(one, range(2)))

    def sweep_all(self) -> list[dict[str, Any]]:
        """Two sweeps at once, again until neither has more; every answer."""
        answers: list[dict[str, Any]] = []
        while True:
            both = self.sweeps_at_once()
            answers += both
            if not any(s["more"] for s in both):
                return answers

    def notices(self, hours: int) -> int:
        return int(
            self.query(
                "SELECT count(*) FROM access_events WHERE kind = 'expiry_notice'"
                " AND notice_hours = %s",
                hours,
            )[0][0]
        )


@pytest.fixture
def billing(database_url: str) -> Iterator[Billing]:
    clock = ManualClock(dt.datetime.now(dt.UTC).replace(microsecond=0))
    with serve_in_thread(create_app(load(service_env(database_url)), clock=clock)) as url:
        yield Billing(url, clock, database_url)


def test_notices__one_72h_and_one_24h_per_period_under_two_concurrent_sweeps(
    billing: Billing,
) -> None:
    channel = gateways.add_paid_channel(billing.database_url)
    expires = billing.clock.now() + 100 * H
    billing.query(
        "WITH p AS (INSERT INTO people (telegram_user_id)"
        " SELECT 900000 + n FROM generate_series(1, %s) n RETURNING id)"
        " INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,"
        " next_check_at, updated_at) SELECT id, %s, 'active', %s, 3, %s, now() FROM p"
        " RETURNING person_id",
        MEMBERS,
        channel,
        expires,
        expires - 72 * H,
    )
    # Nothing due yet.
    assert [s["examined"] for s in billing.sweeps_at_once()] == [0, 0]
    assert billing.notices(72) == 0

    billing.clock.advance(29 * 3600)  # 71 hours left
    first = billing.sweep_all()
    assert sum(s["reminded"] for s in first) == MEMBERS
    # The two sweeps of the first round both reminded members.
    assert all(s["reminded"] > 0 for s in first[:2]), first
    assert billing.notices(72) == MEMBERS
    assert sum(s["reminded"] for s in billing.sweeps_at_once()) == 0

    # One member renews before the 24-hour reminder: their period's notice is never written.
    renewed = 900001
    with httpx.Client(verify=verified()) as client:
        order = gateways.create_invoice(client, billing.url, renewed, channel, "subgate")
        paid = gateways.subgate(
            order["order_reference"], "renew-1", "12.50", ts=int(billing.clock.now().timestamp())
        )
        assert paid.send(client, billing.url).json()["applied"] is True

    billing.clock.advance(48 * 3600)  # 23 hours left
    second = billing.sweep_all()
    assert sum(s["reminded"] for s in second) == MEMBERS - 1
    assert all(s["reminded"] > 0 for s in second[:2]), second
    assert billing.notices(24) == MEMBERS - 1
    assert billing.notices(72) == MEMBERS
    [(renewed_24,)] = billing.query(
        "SELECT count(*) FROM access_events e JOIN people p ON p.id = e.person_id"
        " WHERE p.telegram_user_id = %s AND e.kind = 'expiry_notice' AND e.notice_hours = 24",
        renewed,
    )
    assert renewed_24 == 0
    # The renewed membership is next due at its new period's first reminder.
    [(next_check, new_expires)] = billing.query(
        "SELECT m.next_check_at, m.expires_at FROM memberships m JOIN people p"
        " ON p.id = m.person_id WHERE p.telegram_user_id = %s",
        renewed,
    )
    assert new_expires == expires + dt.timedelta(days=30)
    assert next_check == new_expires - 72 * H


def test_notices__a_sweep_that_missed_the_72h_reminder_sends_the_24h_one_alone(
    billing: Billing,
) -> None:
    channel = gateways.add_paid_channel(billing.database_url)
    expires = billing.clock.now() + 20 * H
    gateways.set_membership(billing.database_url, 901, channel, expires)
    billing.query("UPDATE memberships SET next_check_at = %s RETURNING person_id", expires - 72 * H)
    assert sum(s["reminded"] for s in billing.sweeps_at_once()) == 1
    assert (billing.notices(72), billing.notices(24)) == (0, 1)
    # Then grace at the expiry, as before.
    billing.clock.advance(21 * 3600)
    assert sum(s["to_grace"] for s in billing.sweeps_at_once()) == 1
