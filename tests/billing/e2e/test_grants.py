"""Access granted without a payment (`POST /internal/grants`): until a date, never shortening,
once however often it is repeated, and then grace and removal like any membership."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from billing.app import create_app
from billing.settings import load
from billing.transitions import Extension, Grant, replay
from shared.clock import ManualClock
from shared.testing import serve_in_thread
from shared.tls import verified
from tests.billing.e2e import gateways
from tests.conftest import HTTP, SECRETS, gather_limited, service_env

BEARER = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
DAY = dt.timedelta(days=1)


class Billing:
    def __init__(self, url: str, clock: ManualClock, database_url: str) -> None:
        self.url = url
        self.clock = clock
        self.database_url = database_url

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.database_url) as conn:
            return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]

    def grant(self, user: int, channel: int, until: dt.datetime, **extra: Any) -> httpx.Response:
        body = {
            "telegram_user_id": user,
            "channel_id": channel,
            "until": until.isoformat(),
            "reason": "imported",
            **extra,
        }
        return HTTP.post(f"{self.url}/internal/grants", json=body, headers=BEARER, timeout=30)

    def sweep(self) -> dict[str, Any]:
        answer = HTTP.post(f"{self.url}/v1/sweep", headers=gateways.sweep_request(), timeout=60)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


@pytest.fixture
def billing(database_url: str) -> Iterator[Billing]:
    clock = ManualClock(dt.datetime.now(dt.UTC).replace(microsecond=0))
    with serve_in_thread(create_app(load(service_env(database_url)), clock=clock)) as url:
        yield Billing(url, clock, database_url)


def test_grant__until_a_date_once_and_never_shortening(billing: Billing) -> None:
    channel = gateways.add_paid_channel(billing.database_url, grace_days=2)
    until = billing.clock.now() + 10 * DAY
    first = billing.grant(501, channel, until)
    assert first.status_code == 200, first.text
    assert first.json() == {
        "applied": True,
        "membership": {"status": "active", "expires_at": until.isoformat()},
    }
    assert billing.grant(501, channel, until).json()["applied"] is False
    assert billing.grant(501, channel, until - DAY).json()["applied"] is False
    longer = billing.grant(501, channel, until + DAY).json()
    assert (longer["applied"], longer["membership"]["expires_at"]) == (
        True,
        (until + DAY).isoformat(),
    )
    events = billing.query(
        "SELECT cause, until, reason, payment_id FROM membership_events ORDER BY id"
    )
    # The shorter one moved nothing but is history (once), for a refund's replay to keep it.
    assert events == [
        ("grant", until, "imported", None),
        ("grant", until - DAY, "imported", None),
        ("grant", until + DAY, "imported", None),
    ]
    assert billing.query("SELECT kind FROM access_events ORDER BY id") == [("grant",), ("grant",)]
    assert replay([Grant(until), Grant(until - DAY), Grant(until + DAY)]) == until + DAY


def test_grant__history_replays_with_payments(billing: Billing) -> None:
    channel = gateways.add_paid_channel(billing.database_url)
    paid_at = billing.clock.now()
    with httpx.Client(verify=verified()) as client:
        order = gateways.create_invoice(client, billing.url, 502, channel, "subgate")
        paid = gateways.subgate(
            order["order_reference"], "p-1", "12.50", ts=int(paid_at.timestamp())
        )
        assert paid.send(client, billing.url).json()["applied"] is True
    until = paid_at + 90 * DAY
    assert billing.grant(502, channel, until).json()["applied"] is True
    [(expires,)] = billing.query("SELECT expires_at FROM memberships")
    assert expires == replay([Extension(paid_at, 30), Grant(until)]) == until


def test_grant__refused_plainly(billing: Billing) -> None:
    channel = gateways.add_paid_channel(billing.database_url)
    free = billing.query(
        "INSERT INTO channels (telegram_chat_id, title) VALUES (-100999, 'Free') RETURNING id"
    )[0][0]
    later = billing.clock.now() + DAY
    assert billing.grant(503, free, later).status_code == 404
    assert billing.grant(503, channel, billing.clock.now() - DAY).status_code == 422
    naive = later.replace(tzinfo=None)
    assert billing.grant(503, channel, naive).status_code == 422
    assert billing.grant(503, channel, later, reason="").status_code == 422
    assert billing.grant(503, channel, later, extra="x").status_code == 422
    assert billing.grant(0, channel, later).status_code == 422
    unauthorized = HTTP.post(f"{billing.url}/internal/grants", json={})
    assert unauthorized.status_code == 401
    assert billing.query("SELECT count(*) FROM membership_events") == [(0,)]


@pytest.mark.slow(11)
def test_grant__a_thousand_imported_kept_by_the_first_sweep_then_grace_then_removal(
    billing: Billing,
) -> None:
    channel = gateways.add_paid_channel(billing.database_url, grace_days=3)
    until = billing.clock.now() + 7 * DAY

    async def grant_all() -> list[int]:
        async with httpx.AsyncClient(timeout=60, verify=verified()) as client:
            calls = [
                client.post(
                    f"{billing.url}/internal/grants",
                    json={
                        "telegram_user_id": 600_000 + n,
                        "channel_id": channel,
                        "until": until.isoformat(),
                        "reason": "imported",
                    },
                    headers=BEARER,
                )
                for n in range(1000)
            ]
            return [answer.status_code for answer in await gather_limited(calls, limit=16)]

    assert asyncio.run(grant_all()) == [200] * 1000
    first = billing.sweep()
    assert (first["to_grace"], first["to_expired"]) == (0, 0)
    billing.clock.advance((7 * DAY + dt.timedelta(hours=1)).total_seconds())
    swept = [billing.sweep(), billing.sweep()]
    assert sum(s["to_grace"] for s in swept) == 1000
    billing.clock.advance((3 * DAY).total_seconds())
    swept = [billing.sweep(), billing.sweep()]
    assert sum(s["to_expired"] for s in swept) == 1000
    # (No sweep ran before the expiry here, so no expiry notices either.)
    assert billing.query("SELECT kind, count(*) FROM access_events GROUP BY 1 ORDER BY 1") == [
        ("grant", 1000),
        ("reminder", 1000),
        ("revoke", 1000),
    ]
