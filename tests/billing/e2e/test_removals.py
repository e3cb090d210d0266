"""An owner's removal (`POST /internal/removals`): the membership ends now, out of the channel
with no grace, once per request key; a retry never undoes a payment made since, and the
history replays to what the membership says."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from billing.app import create_app
from billing.settings import load
from billing.transitions import Extension, Grant, Removal, ended, replay
from shared.clock import ManualClock
from shared.testing import serve_in_thread
from shared.tls import verified
from tests.billing.e2e import gateways
from tests.billing.e2e.test_grants import BEARER, DAY, Billing
from tests.conftest import HTTP, service_env


class Removing(Billing):
    def remove(self, user: int, channel: int, key: str, **extra: Any) -> httpx.Response:
        body = {
            "telegram_user_id": user,
            "channel_id": channel,
            "request_key": key,
            "reason": "removed by owner@example.com",
            **extra,
        }
        return HTTP.post(f"{self.url}/internal/removals", json=body, headers=BEARER, timeout=30)

    def membership(self, user: int, channel: int) -> tuple[str, dt.datetime]:
        [(status, expires_at)] = self.query(
            "SELECT m.status, m.expires_at FROM memberships m JOIN people p ON p.id = m.person_id"
            " WHERE p.telegram_user_id = %s AND m.channel_id = %s",
            user,
            channel,
        )
        return str(status), expires_at

    def differences(self) -> list[Any]:
        report = HTTP.get(f"{self.url}/internal/reconcile", headers=BEARER, timeout=30)
        assert report.status_code == 200, report.text
        return list(report.json()["ledger"]["differences"])


@pytest.fixture
def billing(database_url: str) -> Iterator[Removing]:
    clock = ManualClock(dt.datetime.now(dt.UTC).replace(microsecond=0))
    with serve_in_thread(create_app(load(service_env(database_url)), clock=clock)) as url:
        yield Removing(url, clock, database_url)


def test_removal__ends_now_once_and_a_retry_after_a_new_payment_removes_nobody(
    billing: Removing,
) -> None:
    channel = gateways.add_paid_channel(billing.database_url, grace_days=3)
    granted = billing.clock.now() + 10 * DAY
    assert billing.grant(701, channel, granted).json()["applied"] is True
    billing.clock.advance(3600)
    removed_at = billing.clock.now()
    first = billing.remove(701, channel, "press-0001:1:1")
    assert first.status_code == 200, first.text
    assert first.json() == {
        "applied": True,
        "membership": {"status": "expired", "expires_at": removed_at.isoformat()},
    }
    # Out now, with no grace: one revoke for botedge, and nothing left for the sweep.
    assert billing.membership(701, channel) == ("expired", removed_at)
    assert billing.query("SELECT kind FROM access_events ORDER BY id") == [
        ("grant",),
        ("revoke",),
    ]
    assert billing.sweep()["to_expired"] == 0
    assert billing.differences() == []
    # The same press again (a lost answer retried) changes nothing.
    again = billing.remove(701, channel, "press-0001:1:1")
    assert again.json() == {**first.json(), "applied": False}
    # They pay again; the old press retried later still removes nobody.
    billing.clock.advance(3600)
    paid_at = billing.clock.now()
    with httpx.Client(verify=verified()) as client:
        order = gateways.create_invoice(client, billing.url, 701, channel, "subgate")
        paid = gateways.subgate(
            order["order_reference"], "p-701", "12.50", ts=int(paid_at.timestamp())
        )
        assert paid.send(client, billing.url).json()["applied"] is True
    assert billing.membership(701, channel) == ("active", paid_at + 30 * DAY)
    late = billing.remove(701, channel, "press-0001:1:1")
    assert late.json()["applied"] is False
    assert billing.membership(701, channel) == ("active", paid_at + 30 * DAY)
    events = billing.query(
        "SELECT cause, to_status, until, request_key FROM membership_events ORDER BY id"
    )
    assert events == [
        ("grant", "active", granted, None),
        ("removal", "expired", removed_at, "press-0001:1:1"),
        ("payment", "active", None, None),
    ]
    history = [Grant(granted), Removal(removed_at), Extension(paid_at, 30)]
    assert replay(history) == paid_at + 30 * DAY
    assert ended(history) is False
    assert billing.differences() == []


def test_removal__of_a_member_in_grace_revokes_and_of_one_already_out_only_records(
    billing: Removing,
) -> None:
    channel = gateways.add_paid_channel(billing.database_url, grace_days=3)
    ends = billing.clock.now() + 2 * DAY
    assert billing.grant(702, channel, ends).json()["applied"] is True
    assert billing.grant(703, channel, ends - 2 * DAY + DAY / 24).json()["applied"] is True
    # Four days on: 702 two days into its grace, 703 past its own.
    billing.clock.advance((4 * DAY).total_seconds())
    billing.sweep()
    billing.sweep()
    assert billing.membership(702, channel) == ("grace", ends)
    assert billing.membership(703, channel)[0] == "expired"
    grace = billing.remove(702, channel, "press-0002:2:1")
    # The paid time had ended already: it stays where it ended, and grace is cut short.
    assert grace.json() == {
        "applied": True,
        "membership": {"status": "expired", "expires_at": ends.isoformat()},
    }
    out = billing.remove(703, channel, "press-0002:3:1")
    assert out.json() == {
        "applied": False,
        "membership": {"status": "expired", "expires_at": (ends - 2 * DAY + DAY / 24).isoformat()},
    }
    revokes = billing.query(
        "SELECT p.telegram_user_id FROM access_events a JOIN membership_events e"
        " ON e.id = a.membership_event_id JOIN people p ON p.id = a.person_id"
        " WHERE a.kind = 'revoke' AND e.cause = 'removal'"
    )
    assert revokes == [(702,)]
    # Both are history: who ended it is on record for each.
    assert billing.query("SELECT count(*) FROM membership_events WHERE cause = 'removal'") == [(2,)]
    assert billing.differences() == []


def test_removal__refused_plainly_and_nothing_written(billing: Removing) -> None:
    channel = gateways.add_paid_channel(billing.database_url)
    other = gateways.add_paid_channel(billing.database_url, chat_id=-1001000000002)
    later = billing.clock.now() + DAY
    assert billing.grant(704, channel, later).json()["applied"] is True
    before = billing.query("SELECT count(*) FROM membership_events")
    # Nobody billing knows, and a person with no membership in that channel.
    assert billing.remove(799, channel, "press-0003:9:1").status_code == 404
    unknown = billing.remove(704, other, "press-0003:4:2")
    assert unknown.status_code == 404
    assert unknown.headers["content-type"] == "application/problem+json"
    for bad in (
        {"request_key": "short"},
        {"request_key": "has space 12345"},
        {"reason": ""},
        {"extra": 1},
        {"telegram_user_id": 0},
        {"channel_id": "1"},
    ):
        key = bad.pop("request_key", "press-0003:4:1")
        assert billing.remove(704, channel, key, **bad).status_code == 422, bad
    assert HTTP.post(f"{billing.url}/internal/removals", json={}).status_code == 401
    assert billing.query("SELECT count(*) FROM membership_events") == before
    # A key that removed one person cannot remove another.
    assert billing.grant(705, channel, later).json()["applied"] is True
    assert billing.remove(704, channel, "press-0004:4:1").json()["applied"] is True
    reused = billing.remove(705, channel, "press-0004:4:1")
    assert reused.status_code == 422
    assert reused.json()["errors"] == [{"field": "request_key", "code": "taken"}]
    assert billing.membership(705, channel)[0] == "active"
