"""Free trials (`POST /internal/trials`): a trial plan's days of access once per person and
channel, recorded as a `trial` membership event that replays like a grant; a later payment
extends from the trial's end; a second trial is refused with nothing written."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from billing.app import create_app
from billing.settings import load
from billing.transitions import Extension, Grant, replay
from shared.clock import ManualClock
from shared.testing import serve_in_thread
from shared.tls import verified
from tests.billing.e2e import gateways
from tests.billing.e2e.test_grants import BEARER, DAY, Billing
from tests.conftest import HTTP, service_env

TABLES = ("trials", "memberships", "membership_events", "access_events", "people")


@pytest.fixture
def billing(database_url: str) -> Iterator[Billing]:
    clock = ManualClock(dt.datetime.now(dt.UTC).replace(microsecond=0))
    with serve_in_thread(create_app(load(service_env(database_url)), clock=clock)) as url:
        yield Billing(url, clock, database_url)


def add_trial(database_url: str, channel: int, days: int = 7, **values: Any) -> int:
    trial = {"name": "Free week", "kind": "trial", "price_minor": 0, "currency": "USD"}
    return gateways.insert_row(
        database_url,
        "plans",
        {"channel_id": channel, **trial, "period_days": days, "grace_days": 1, **values},
    )


def take(billing: Billing, user: int, channel: int, plan: int) -> httpx.Response:
    body = {"telegram_user_id": user, "channel_id": channel, "plan_id": plan}
    return HTTP.post(f"{billing.url}/internal/trials", json=body, headers=BEARER, timeout=30)


def counts(billing: Billing) -> list[int]:
    return [billing.query(f"SELECT count(*) FROM {t}")[0][0] for t in TABLES]


def test_trial__taken_once_the_second_refused_with_nothing_written(billing: Billing) -> None:
    channel = gateways.add_paid_channel(billing.database_url)
    plan = add_trial(billing.database_url, channel)
    now = billing.clock.now()

    first = take(billing, 801, channel, plan)
    assert first.status_code == 201, first.text
    ends = now + 7 * DAY
    assert first.json() == {"membership": {"status": "active", "expires_at": ends.isoformat()}}
    assert billing.query("SELECT cause, until, reason FROM membership_events") == [
        ("trial", ends, "Free week")
    ]
    assert billing.query("SELECT kind, expires_at FROM access_events") == [("grant", ends)]
    assert billing.query("SELECT plan_id FROM trials") == [(plan,)]
    before = counts(billing)

    billing.clock.advance((30 * DAY).total_seconds())
    again = take(billing, 801, channel, plan)
    assert again.status_code == 409
    assert again.headers["content-type"] == "application/problem+json"
    assert again.json()["type"] == "/problems/trial-refused"
    assert "already" in again.json()["detail"]
    assert counts(billing) == before


def test_trial__then_a_payment_extends_from_the_trials_end(billing: Billing) -> None:
    channel = gateways.add_paid_channel(billing.database_url)
    plan = add_trial(billing.database_url, channel, days=5)
    ends = billing.clock.now() + 5 * DAY
    assert take(billing, 802, channel, plan).status_code == 201
    billing.clock.advance(DAY.total_seconds())
    paid_at = billing.clock.now()
    with httpx.Client(verify=verified()) as client:
        order = gateways.create_invoice(client, billing.url, 802, channel, "subgate")
        paid = gateways.subgate(
            order["order_reference"], "t-1", "12.50", ts=int(paid_at.timestamp())
        )
        assert paid.send(client, billing.url).json()["applied"] is True
    [(expires,)] = billing.query("SELECT expires_at FROM memberships")
    assert expires == ends + 30 * DAY
    assert expires == replay([Grant(ends), Extension(paid_at, 30)])
    assert billing.query("SELECT cause FROM membership_events ORDER BY id") == [
        ("trial",),
        ("payment",),
    ]


def test_trial__refused_to_a_member_of_before_and_not_sold_as_an_invoice(
    billing: Billing,
) -> None:
    channel = gateways.add_paid_channel(billing.database_url)
    plan = add_trial(billing.database_url, channel)
    assert billing.grant(803, channel, billing.clock.now() + DAY).status_code == 200
    before = counts(billing)
    refused = take(billing, 803, channel, plan)
    assert refused.status_code == 409
    assert refused.json()["detail"] == "the free trial is for people new to this channel"
    assert counts(billing) == before

    # A trial is not paid for, and a regular plan is not a trial.
    [(default,)] = billing.query("SELECT id FROM plans WHERE is_default")
    assert take(billing, 804, channel, default).json()["type"] == "/problems/unknown-plan"
    invoice = HTTP.post(
        f"{billing.url}/internal/invoices",
        json={
            "telegram_user_id": 804,
            "channel_id": channel,
            "gateway": "subgate",
            "plan_id": plan,
        },
        headers=BEARER,
    )
    assert invoice.json()["type"] == "/problems/unknown-plan"
    assert counts(billing)[:4] == before[:4]


def test_trial__ten_at_once_by_one_person_one_taken(billing: Billing) -> None:
    channel = gateways.add_paid_channel(billing.database_url)
    plan = add_trial(billing.database_url, channel)
    body = {"telegram_user_id": 805, "channel_id": channel, "plan_id": plan}

    async def race() -> list[int]:
        async with httpx.AsyncClient(headers=BEARER, timeout=30, verify=verified()) as client:
            answers = await asyncio.gather(
                *(client.post(f"{billing.url}/internal/trials", json=body) for _ in range(10))
            )
        return sorted(a.status_code for a in answers)

    assert asyncio.run(race()) == [201] + [409] * 9
    assert billing.query("SELECT count(*) FROM membership_events") == [(1,)]
