"""Who may be in a paid channel, through the panel: the whitelist, grants relayed to billing,
the import of members from before Gatehouse, and the channel's admission mode."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from billing.app import create_app as billing_app
from billing.settings import load as billing_settings
from panel_api.app import create_app
from panel_api.seed import seed
from shared.clock import ManualClock
from shared.testing import serve_in_thread
from tests.billing.e2e import gateways
from tests.conftest import HTTP, TEST_BCRYPT_ROUNDS, panel_settings, service_env
from tests.panel_api.e2e.conftest import PASSWORD, Panel, owner_and_viewer
from tests.scale import sized

DAY = dt.timedelta(days=1)


@dataclass
class Rig:
    panel: Panel
    billing: str
    clock: ManualClock
    channel: int

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.panel.database_url) as conn:
            return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]

    def sweep(self) -> dict[str, Any]:
        answer = HTTP.post(
            f"{self.billing}/v1/sweep", headers=gateways.sweep_request(), timeout=120
        )
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


@pytest.fixture
def rig(database_url: str) -> Iterator[Rig]:
    """billing and the panel in threads on one clock that the test moves."""
    clock = ManualClock(dt.datetime.now(dt.UTC).replace(microsecond=0))
    channel = gateways.add_paid_channel(database_url, grace_days=3)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    billing = billing_app(billing_settings(service_env(database_url)), clock=clock)
    with serve_in_thread(billing) as billing_url:
        settings = panel_settings(database_url, BILLING_URL=billing_url)
        with serve_in_thread(create_app(settings, clock=clock)) as url:
            panel = Panel(url, owner_and_viewer(url), 0, database_url, billing_url)
            yield Rig(panel, billing_url, clock, channel)


def test_whitelist__added_listed_removed_and_audited(rig: Rig) -> None:
    panel, channel = rig.panel, rig.channel
    path = f"/v1/channels/{channel}/whitelist"
    assert panel.call("POST", path, {"telegram_user_id": 42}, role="viewer").status_code == 403
    made = panel.call("POST", path, {"telegram_user_id": 42, "note": "editor"})
    assert made.status_code == 201, made.text
    assert (made.json()["telegram_user_id"], made.json()["note"]) == (42, "editor")
    panel.call("POST", path, {"telegram_user_id": 7})
    listed = panel.call("GET", path, role="viewer").json()["items"]
    assert [e["telegram_user_id"] for e in listed] == [7, 42]
    assert panel.call("DELETE", f"{path}/42").status_code == 204
    assert panel.call("DELETE", f"{path}/42").status_code == 404
    assert (
        panel.call("POST", "/v1/channels/99999/whitelist", {"telegram_user_id": 1}).status_code
        == 404
    )
    free = rig.query(
        "INSERT INTO channels (telegram_chat_id, title) VALUES (-100777, 'Free') RETURNING id"
    )[0][0]
    not_paid = panel.call("POST", f"/v1/channels/{free}/whitelist", {"telegram_user_id": 1})
    assert not_paid.status_code == 422
    actions = [a for (a,) in rig.query("SELECT action FROM audit_log ORDER BY id")]
    assert actions[-3:] == ["whitelist.add", "whitelist.add", "whitelist.remove"]


def test_import__whitelist_lists_the_bad_ids_and_adds_each_once(rig: Rig) -> None:
    path = f"/v1/channels/{rig.channel}/import"
    ids: list[Any] = [101, "102", " 103 ", "abc", -5, 0, "1e3", 101, "9" * 30]
    done = rig.panel.call("POST", path, {"ids": ids, "action": "whitelist"})
    assert done.status_code == 200, done.text
    assert done.json() == {
        "accepted": 3,
        "added": 3,
        "rejected": [
            {"index": 3, "value": "abc", "reason": "not a whole number"},
            {"index": 4, "value": "-5", "reason": "not a Telegram user id"},
            {"index": 5, "value": "0", "reason": "not a Telegram user id"},
            {"index": 6, "value": "1e3", "reason": "not a whole number"},
            {"index": 7, "value": "101", "reason": "listed twice"},
            {"index": 8, "value": "9" * 30, "reason": "not a Telegram user id"},
        ],
    }
    again = rig.panel.call("POST", path, {"ids": [101, 104], "action": "whitelist"}).json()
    assert (again["accepted"], again["added"]) == (2, 1)
    assert rig.query("SELECT count(*) FROM channel_whitelist") == [(4,)]
    too_many = rig.panel.call("POST", path, {"ids": list(range(1, 10_002)), "action": "whitelist"})
    assert too_many.status_code == 422
    no_date = rig.panel.call("POST", path, {"ids": [1], "action": "grant"})
    assert no_date.status_code == 422


@pytest.mark.slow(10)
@pytest.mark.scaled
def test_import__hundreds_granted_until_a_date_kept_then_grace_then_removal(rig: Rig) -> None:
    # A thousand at full size.
    many = sized(300, 1000)
    until = rig.clock.now() + 7 * DAY
    ids = [600_000 + n for n in range(many)]
    done = rig.panel.call(
        "POST",
        f"/v1/channels/{rig.channel}/import",
        {"ids": ids, "action": "grant", "until": until.isoformat(), "reason": "before us"},
        # A thousand grants through billing: 5 s alone, several times that beside the suite.
        timeout=180,
    )
    assert done.status_code == 200, done.text
    assert done.json() == {"accepted": many, "added": many, "rejected": []}
    assert rig.query("SELECT count(*), min(expires_at), max(expires_at) FROM memberships") == [
        (many, until, until)
    ]
    # The first sweep removes none of them.
    first = rig.sweep()
    assert (first["to_grace"], first["to_expired"]) == (0, 0)
    # Imported twice: nothing more.
    again = rig.panel.call(
        "POST",
        f"/v1/channels/{rig.channel}/import",
        {"ids": ids, "action": "grant", "until": until.isoformat()},
    ).json()
    assert (again["accepted"], again["added"]) == (many, 0)
    assert rig.query("SELECT count(*) FROM membership_events WHERE cause = 'grant'") == [(many,)]
    # After the date: grace, then removal, as for any member.
    rig.clock.advance((7 * DAY + dt.timedelta(hours=1)).total_seconds())
    assert sum(rig.sweep()["to_grace"] for _ in range(3)) == many
    rig.clock.advance((3 * DAY).total_seconds())
    assert sum(rig.sweep()["to_expired"] for _ in range(3)) == many


def test_grant__relayed_from_billing_and_audited(rig: Rig) -> None:
    until = (rig.clock.now() + 30 * DAY).isoformat()
    body = {"telegram_user_id": 77, "channel_id": rig.channel, "until": until, "reason": "partner"}
    assert rig.panel.call("POST", "/v1/grants", body, role="viewer").status_code == 403
    made = rig.panel.call("POST", "/v1/grants", body)
    assert made.status_code == 200, made.text
    assert made.json()["applied"] is True
    assert rig.query("SELECT action FROM audit_log ORDER BY id DESC LIMIT 1") == [("grants.add",)]
    missing = rig.panel.call("POST", "/v1/grants", {**body, "channel_id": 99999})
    assert (missing.status_code, missing.json()["type"]) == (404, "/problems/unknown-channel")


def test_channel__admission_mode_and_the_join_request_link_shown(rig: Rig) -> None:
    changed = rig.panel.call("PATCH", f"/v1/channels/{rig.channel}", {"admission": "join_request"})
    assert changed.status_code == 200, changed.text
    assert (changed.json()["admission"], changed.json()["join_request_link"]) == (
        "join_request",
        None,
    )
    rig.query("UPDATE channels SET join_request_link = 'https://t.me/+abc' RETURNING id")
    items = rig.panel.call("GET", "/v1/channels").json()["items"]
    [channel] = [c for c in items if c["id"] == rig.channel]
    assert channel["join_request_link"] == "https://t.me/+abc"
    bad = rig.panel.call("PATCH", f"/v1/channels/{rig.channel}", {"admission": "open"})
    assert bad.status_code == 422


def granted(rig: Rig, users: tuple[int, ...], until: dt.datetime) -> None:
    """Each of `users` given access in the rig's channel until `until`, through the panel."""
    for user in users:
        body = {
            "telegram_user_id": user,
            "channel_id": rig.channel,
            "until": until.isoformat(),
            "reason": "partner",
        }
        assert rig.panel.call("POST", "/v1/grants", body).status_code == 200


def test_bulk_extend__each_chosen_member_extended_once_a_retry_extends_nobody_twice(
    rig: Rig,
) -> None:
    until = rig.clock.now() + 10 * DAY
    granted(rig, (81, 82, 83), until)
    chosen = rig.query(
        "SELECT m.person_id, m.channel_id, m.expires_at FROM memberships m"
        " JOIN people p ON p.id = m.person_id WHERE p.telegram_user_id IN (81, 82, 83)"
        " ORDER BY m.person_id"
    )
    members = [{"person_id": p, "channel_id": c} for p, c, _ in chosen]
    nobody = {"person_id": 999_999, "channel_id": rig.channel}
    body = {"request_key": "press-0001", "days": 5, "members": [*members, nobody]}
    assert rig.panel.call("POST", "/v1/memberships/extend", body, role="viewer").status_code == 403

    first = rig.panel.call("POST", "/v1/memberships/extend", body)
    assert first.status_code == 200, first.text
    outcomes = [(r["person_id"], r["outcome"]) for r in first.json()["results"]]
    assert outcomes == [*((p, "extended") for p, _, _ in chosen), (999_999, "not-found")]
    after = rig.query(
        "SELECT person_id, expires_at FROM memberships WHERE person_id = ANY(%s) ORDER BY 1",
        [p for p, _, _ in chosen],
    )
    assert after == [(p, expires + 5 * DAY) for p, _, expires in chosen]

    # The same press again (a retry), minutes later: the dates fixed the first time, granted
    # once by billing; nobody extended twice.
    rig.clock.advance(600)
    again = rig.panel.call("POST", "/v1/memberships/extend", body)
    assert again.status_code == 200, again.text
    assert [r["outcome"] for r in again.json()["results"]] == ["unchanged"] * 3 + ["not-found"]
    assert (
        rig.query(
            "SELECT person_id, expires_at FROM memberships WHERE person_id = ANY(%s) ORDER BY 1",
            [p for p, _, _ in chosen],
        )
        == after
    )
    # A new press extends again, from the new dates.
    newer = rig.panel.call("POST", "/v1/memberships/extend", {**body, "request_key": "press-0002"})
    assert [r["outcome"] for r in newer.json()["results"]][:3] == ["extended"] * 3
    audited = rig.query("SELECT target FROM audit_log WHERE action = 'memberships.extend'")
    assert sorted(t for (t,) in audited) == [
        "bulk:press-0001",
        "bulk:press-0001",
        "bulk:press-0002",
    ]


def test_bulk_remove__each_chosen_member_out_now_once_a_retry_removes_nobody_twice(
    rig: Rig,
) -> None:
    until = rig.clock.now() + 10 * DAY
    granted(rig, (91, 92, 93), until)
    chosen = rig.query(
        "SELECT m.person_id, m.channel_id FROM memberships m JOIN people p ON p.id = m.person_id"
        " WHERE p.telegram_user_id IN (91, 92) ORDER BY m.person_id"
    )
    members = [{"person_id": p, "channel_id": c} for p, c in chosen]
    nobody = {"person_id": 999_999, "channel_id": rig.channel}
    body = {"request_key": "press-0101", "members": [*members, nobody]}
    assert rig.panel.call("POST", "/v1/memberships/remove", body, role="viewer").status_code == 403
    rig.clock.advance(60)
    removed_at = rig.clock.now()
    first = rig.panel.call("POST", "/v1/memberships/remove", body)
    assert first.status_code == 200, first.text
    outcomes = [(r["person_id"], r["outcome"]) for r in first.json()["results"]]
    assert outcomes == [*((p, "removed") for p, _ in chosen), (999_999, "not-found")]
    states = (
        "SELECT p.telegram_user_id, m.status, m.expires_at FROM memberships m"
        " JOIN people p ON p.id = m.person_id ORDER BY 1"
    )
    assert rig.query(states) == [
        (91, "expired", removed_at),
        (92, "expired", removed_at),
        (93, "active", until),
    ]
    revokes = rig.query("SELECT count(*) FROM access_events WHERE kind = 'revoke'")
    assert revokes == [(2,)]
    # The same press again: nobody removed twice, nothing new for botedge.
    again = rig.panel.call("POST", "/v1/memberships/remove", body)
    assert [r["outcome"] for r in again.json()["results"]] == ["unchanged"] * 2 + ["not-found"]
    assert rig.query("SELECT count(*) FROM access_events WHERE kind = 'revoke'") == revokes
    [(reason,)] = rig.query("SELECT DISTINCT reason FROM membership_events WHERE cause = 'removal'")
    assert reason == "removed by owner@example.com"
    audited = rig.query("SELECT target, after FROM audit_log WHERE action = 'memberships.remove'")
    assert audited == [("bulk:press-0101", {"members": 3, "found": 2})] * 2
    # A member's history says who ended it, in the panel's terms.
    person = chosen[0][0]
    history = rig.panel.call(
        "GET", f"/v1/memberships/{person}/{rig.channel}/events", role="viewer"
    ).json()
    assert [e["cause"] for e in history["items"]] == ["grant", "removal"]
