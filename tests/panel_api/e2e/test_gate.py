"""The gate's configuration through the panel: channels found through botedge with the bot's
rights, paid channels with a manager bot and plan, contents and their links, access events."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg
import pytest

from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot
from tests.conftest import (
    HTTP,
    TEST_BCRYPT_ROUNDS,
    Serve,
    panel_settings,
    serve_botedge_api,
    serve_simtelegram,
)
from tests.panel_api.e2e.conftest import call_as

PASSWORD = "correct horse battery"
SPONSOR, HIDDEN = -1001000000501, -1001000000502


@dataclass
class Panel:
    url: str
    owner: str
    bot: int
    database_url: str

    def call(self, method: str, path: str, body: Any = None) -> httpx.Response:
        return call_as(self.owner, method, f"{self.url}{path}", body)


@pytest.fixture
def panel(serve: Serve, database_url: str) -> Iterator[Panel]:
    sim = serve_simtelegram(serve)
    botedge = serve_botedge_api(serve, database_url, TELEGRAM_API_BASE=sim.url)
    bot, _, _ = insert_bot(database_url)
    for chat, name, admins in ((SPONSOR, "sponsor_a", [5550001]), (HIDDEN, "hidden_b", [])):
        HTTP.post(
            f"{sim.url}/_sim/chats",
            json={
                "id": chat,
                "type": "channel",
                "title": name.title(),
                "username": name,
                "admin_bots": admins,
            },
        ).raise_for_status()
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, BOTEDGE_URL=botedge.url)
    with serve_in_thread(create_app(settings)) as url:
        owner = HTTP.post(
            f"{url}/v1/auth/login", json={"email": "owner@example.com", "password": PASSWORD}
        ).json()["access_token"]
        yield Panel(url, owner, bot, database_url)


def add_channel(panel: Panel, chat: str) -> int:
    found = panel.call("POST", "/v1/channels", {"bot_id": panel.bot, "chat": chat})
    assert found.status_code == 200, found.text
    return int(found.json()["chat"]["id"])


def test_channels__found_with_rights_and_the_non_admin_one_flagged(panel: Panel) -> None:
    sponsor = add_channel(panel, "https://t.me/sponsor_a")
    hidden = add_channel(panel, "@hidden_b")
    channels = {c["id"]: c for c in panel.call("GET", "/v1/channels").json()["items"]}
    [on_sponsor] = channels[sponsor]["bots"]
    [on_hidden] = channels[hidden]["bots"]
    assert (on_sponsor["is_admin"], on_sponsor["flagged"]) == (True, False)
    assert (on_hidden["is_admin"], on_hidden["flagged"]) == (False, True)
    missing = panel.call("POST", "/v1/channels", {"bot_id": panel.bot, "chat": "@nobody_here"})
    assert (missing.status_code, missing.json()["type"]) == (404, "/problems/chat-not-found")
    bad = panel.call("POST", "/v1/channels", {"bot_id": panel.bot, "chat": "not a channel"})
    assert bad.status_code == 422


def test_channel__paid_with_a_manager_bot_and_a_plan(panel: Panel) -> None:
    sponsor = add_channel(panel, "@sponsor_a")
    plan = {"price": "5", "currency": "EUR", "period_days": 30, "grace_days": 2}
    changed = panel.call(
        "PATCH",
        f"/v1/channels/{sponsor}",
        {"is_paid": True, "manager_bot_id": panel.bot, "plan": plan},
    )
    assert changed.status_code == 200, changed.text
    assert (changed.json()["is_paid"], changed.json()["manager_bot_id"]) == (True, panel.bot)
    # The price typed in euros, kept in cents and shown with the currency's two digits.
    assert changed.json()["plan"] == {**plan, "price_minor": 500, "price": "5.00"}
    # insert_bot names the bot bot<telegram id>.
    assert changed.json()["pay_link"] == f"https://t.me/bot5550001?start=pay_{sponsor}"
    assert changed.json()["reminder_hours"] == [72, 24]
    reminders = panel.call("PATCH", f"/v1/channels/{sponsor}", {"reminder_hours": [6, 48, 6]})
    assert reminders.json()["reminder_hours"] == [48, 6]
    for bad in ([0], [9000], list(range(1, 12)), ["x"]):
        wrong = panel.call("PATCH", f"/v1/channels/{sponsor}", {"reminder_hours": bad})
        assert wrong.status_code == 422, bad
    unpaid = panel.call("PATCH", f"/v1/channels/{sponsor}", {"is_paid": False}).json()
    assert unpaid["pay_link"] is None
    panel.call("PATCH", f"/v1/channels/{sponsor}", {"is_paid": True})
    cheaper = {**plan, "price": "4.00"}
    assert panel.call("PATCH", f"/v1/channels/{sponsor}", {"plan": cheaper}).status_code == 200
    for price, currency, field, code in (
        ("4.001", "EUR", "plan.price", "too-precise"),
        ("4.5", "JPY", "plan.price", "too-precise"),
        ("0", "EUR", "plan.price", "out-of-range"),
        ("4,00", "EUR", "plan.price", "bad-format"),
        ("4", "ABC", "plan.currency", "not-one-of"),
    ):
        refused = panel.call(
            "PATCH",
            f"/v1/channels/{sponsor}",
            {"plan": {**plan, "price": price, "currency": currency}},
        )
        assert refused.status_code == 422, (price, currency)
        assert refused.json()["errors"] == [{"field": field, "code": code}]
    with psycopg.connect(panel.database_url) as conn:
        plans = conn.execute(
            "SELECT price_minor, is_default FROM plans WHERE channel_id = %s ORDER BY id",
            (sponsor,),
        ).fetchall()
    # The old plan stays for the invoices made with it; one default.
    assert plans == [(500, False), (400, True)]
    one = panel.call("GET", f"/v1/channels/{sponsor}").json()
    assert (one["id"], one["plan"]["price"], one["is_paid"]) == (sponsor, "4.00", True)
    assert panel.call("GET", "/v1/channels/99999").status_code == 404
    unknown_bot = panel.call("PATCH", f"/v1/channels/{sponsor}", {"manager_bot_id": 999})
    assert unknown_bot.status_code == 422
    assert panel.call("PATCH", "/v1/channels/99999", {"is_paid": True}).status_code == 404


def test_contents__link_gate_and_the_codes_refused(panel: Panel) -> None:
    sponsor = add_channel(panel, "@sponsor_a")
    hidden = add_channel(panel, "@hidden_b")
    gate = panel.call(
        "PUT", f"/v1/bots/{panel.bot}/default-gate", {"channels": [{"channel_id": sponsor}]}
    )
    assert gate.status_code == 200, gate.text
    text = {"bot_id": panel.bot, "kind": "text", "body": "Hello"}
    made = panel.call("POST", "/v1/contents", {**text, "code": "promo-1"})
    assert made.status_code == 201, made.text
    content = made.json()
    assert content["link"] == "https://t.me/bot5550001?start=promo-1"
    assert [(g["channel_id"], g["flagged"]) for g in content["gate"]] == [(sponsor, False)]
    own = panel.call(
        "POST", "/v1/contents", {**text, "code": "own_gate", "gate_channel_ids": [hidden]}
    )
    assert own.status_code == 201, own.text
    # A gate channel where the bot is not admin: accepted, flagged.
    assert [(g["channel_id"], g["flagged"]) for g in own.json()["gate"]] == [(hidden, True)]
    for code in ("promo-1", "ads", "pay_12", "has space", "x" * 65, "ümlaut"):
        refused = panel.call("POST", "/v1/contents", {**text, "code": code})
        assert refused.status_code == 422, (code, refused.text)
    assert (
        panel.call("POST", "/v1/contents", {**text, "code": "f", "kind": "file"}).status_code == 422
    )
    moved = panel.call(
        "PATCH", f"/v1/contents/{content['id']}", {**text, "code": "own_gate", "body": "x"}
    )
    assert moved.status_code == 422  # that code is taken by the other content
    edited = panel.call(
        "PATCH", f"/v1/contents/{content['id']}", {**text, "code": "promo-2", "body": "Bye"}
    )
    assert (edited.status_code, edited.json()["body"]) == (200, "Bye")
    listed = panel.call("GET", f"/v1/contents?bot={panel.bot}").json()["items"]
    assert [c["code"] for c in listed] == ["promo-2", "own_gate"]
    assert panel.call("DELETE", f"/v1/contents/{content['id']}").status_code == 204
    assert panel.call("DELETE", f"/v1/contents/{content['id']}").status_code == 404
    actions = [row["action"] for row in panel.call("GET", "/v1/audit?limit=200").json()["items"]]
    for action in ("contents.add", "contents.update", "contents.delete", "bots.default_gate"):
        assert action in actions


def test_contents__a_caption_within_1024_and_a_text_within_4096_as_telegram_counts(
    panel: Panel,
) -> None:
    """A file's body is its caption (1,024 UTF-16 units), a text's the message (4,096); an emoji
    outside the BMP counts two."""
    photo = {"bot_id": panel.bot, "kind": "file", "file_kind": "photo", "file_id": "AgAD"}
    longest = "😀" * 512
    assert (
        panel.call("POST", "/v1/contents", {**photo, "code": "p1", "body": longest}).status_code
        == 201
    )
    refused = panel.call("POST", "/v1/contents", {**photo, "code": "p2", "body": longest + "x"})
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"] == [{"field": "body", "code": "too-long"}]
    text = {"bot_id": panel.bot, "kind": "text"}
    assert (
        panel.call("POST", "/v1/contents", {**text, "code": "t1", "body": "x" * 1025}).status_code
        == 201
    )
    refused = panel.call("POST", "/v1/contents", {**text, "code": "t2", "body": "😀" * 2049})
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"] == [{"field": "body", "code": "too-long"}]
    with psycopg.connect(panel.database_url) as conn:
        codes = [r[0] for r in conn.execute("SELECT code FROM contents ORDER BY code")]
    assert codes == ["p1", "t1"]


def test_access_events__listed_and_a_failed_one_retried(panel: Panel) -> None:
    sponsor = add_channel(panel, "@sponsor_a")
    with psycopg.connect(panel.database_url) as conn:
        person = conn.execute(
            "INSERT INTO people (telegram_user_id) VALUES (77) RETURNING id"
        ).fetchone()
        assert person is not None
        conn.execute(
            "INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,"
            " updated_at) VALUES (%s, %s, 'expired', now(), 0, now())",
            (person[0], sponsor),
        )
        event = conn.execute(
            "INSERT INTO membership_events (person_id, channel_id, from_status, to_status,"
            " old_expires_at, new_expires_at, cause, at) VALUES (%s, %s, 'active', 'expired',"
            " now(), now(), 'sweep', now()) RETURNING id",
            (person[0], sponsor),
        ).fetchone()
        assert event is not None
        row = conn.execute(
            "INSERT INTO access_events (kind, person_id, channel_id, membership_event_id,"
            " expires_at, created_at, state, attempts, last_error) VALUES ('revoke', %s, %s,"
            " %s, now(), now(), 'failed', 8, 'the channel has no manager bot') RETURNING id",
            (person[0], sponsor, event[0]),
        ).fetchone()
        assert row is not None
    [listed] = panel.call("GET", "/v1/access-events?state=failed").json()["items"]
    assert (listed["kind"], listed["attempts"], listed["last_error"]) == (
        "revoke",
        8,
        "the channel has no manager bot",
    )
    retried = panel.call("POST", f"/v1/access-events/{row[0]}/retry")
    assert retried.json() == {"id": row[0], "kind": "revoke", "state": "pending"}
    # Only a failed one: a second retry finds none.
    assert panel.call("POST", f"/v1/access-events/{row[0]}/retry").status_code == 404
    assert panel.call("GET", "/v1/access-events?state=failed").json()["items"] == []
