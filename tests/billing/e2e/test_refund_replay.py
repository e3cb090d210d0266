"""Property: whatever the order of payments, grants, refunds and sweeps, a membership ends as
the replay of what survives (the payments not refunded and the grants, in the order applied).
Every step goes through billing over HTTP, on a real database; payments are dated up to 90
days back, so sweeps have grace and expiry to decide."""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from billing.transitions import VOID, Extension, Grant, Status, replay, target_status
from shared.tls import verified
from tests.billing.e2e import gateways
from tests.conftest import SECRETS, Served

SERVICE = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
GRACE = 3
PEOPLE = itertools.count(20_000)


@dataclass(frozen=True)
class Pay:
    days_ago: int


@dataclass(frozen=True)
class GrantFor:
    days: int


@dataclass(frozen=True)
class Refund:
    nth: int


@dataclass(frozen=True)
class Sweep:
    pass


STEPS = st.lists(
    st.one_of(
        st.builds(Pay, st.integers(0, 90)),
        st.builds(GrantFor, st.integers(1, 60)),
        st.builds(Refund, st.integers(0, 7)),
        st.just(Sweep()),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS)
@example(steps=[Pay(days_ago=0), GrantFor(days=1), Refund(nth=0)])
def test_refunds__any_interleaving_ends_in_the_replay_of_the_survivors(
    billing: Served, database_url: str, steps: list[Any]
) -> None:
    channel = _channel(database_url)
    user = next(PEOPLE)
    applied: list[tuple[str, Extension | Grant]] = []
    refunded: set[str] = set()
    with httpx.Client(timeout=30, verify=verified()) as client:
        for n, step in enumerate(steps):
            now = dt.datetime.now(dt.UTC)
            if isinstance(step, Pay):
                intent = f"pi_{user}_{n}"
                order = gateways.create_invoice(client, billing.url, user, channel, "stripe")
                created = int((now - dt.timedelta(days=step.days_ago)).timestamp())
                paid = gateways.stripe(order["order_reference"], intent, 1250, created=created)
                assert paid.send(client, billing.url).json()["applied"] is True
                paid_at = dt.datetime.fromtimestamp(created, dt.UTC)
                applied.append((intent, Extension(paid_at, 30)))
            elif isinstance(step, GrantFor):
                until = (now + dt.timedelta(days=step.days)).replace(microsecond=0)
                granted = client.post(
                    f"{billing.url}/internal/grants",
                    json={
                        "telegram_user_id": user,
                        "channel_id": channel,
                        "until": until.isoformat(),
                        "reason": "property",
                    },
                    headers=SERVICE,
                )
                assert granted.status_code == 200, granted.text
                applied.append(("", Grant(until)))
            elif isinstance(step, Refund):
                intents = [key for key, change in applied if isinstance(change, Extension)]
                if not intents:
                    continue
                intent = intents[step.nth % len(intents)]
                answer = gateways.stripe_refund(intent, 1250).send(client, billing.url)
                assert answer.json()["applied"] is (intent not in refunded)
                refunded.add(intent)
            else:
                swept = client.post(f"{billing.url}/v1/sweep", headers=gateways.sweep_request())
                assert swept.status_code == 200
        swept = client.post(f"{billing.url}/v1/sweep", headers=gateways.sweep_request())
        assert swept.status_code == 200
    found = _membership(database_url, user, channel)
    if not applied:
        assert found is None
        return
    assert found is not None
    status, expires_at = found
    survivors = [change for key, change in applied if key not in refunded]
    expected = replay(survivors)
    if expected is None:
        # Nothing survives: no paid time at all.
        assert (status, expires_at) == (Status.EXPIRED, VOID)
        return
    assert expires_at == expected
    assert status == target_status(expected, dt.datetime.now(dt.UTC), GRACE)


_CHANNELS: dict[str, int] = {}


def _channel(database_url: str) -> int:
    """One paid channel per test database, made at its first example."""
    if database_url not in _CHANNELS:
        _CHANNELS[database_url] = gateways.add_paid_channel(
            database_url, price_minor=1250, currency="USD", grace_days=GRACE
        )
    return _CHANNELS[database_url]


def _membership(database_url: str, user: int, channel: int) -> tuple[Status, dt.datetime] | None:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT m.status, m.expires_at FROM memberships m JOIN people p"
            " ON p.id = m.person_id WHERE p.telegram_user_id = %s AND m.channel_id = %s",
            (user, channel),
        ).fetchone()
    return None if row is None else (Status(row[0]), row[1])
