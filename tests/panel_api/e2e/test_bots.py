"""Bots through the panel: added by botedge, shown by their last four characters only."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import psycopg
import pytest

from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot, new_token
from tests.conftest import (
    HTTP,
    TEST_BCRYPT_ROUNDS,
    Serve,
    Served,
    ServiceProcess,
    panel_settings,
    serve_simtelegram,
    service_env,
)
from tests.panel_api.e2e.conftest import call_as

PASSWORD = "correct horse battery"


@dataclass
class Setup:
    panel: str
    owner: str
    botedge: ServiceProcess
    sim: Served

    def call(self, method: str, path: str, json_body: object = None) -> httpx.Response:
        return call_as(self.owner, method, f"{self.panel}{path}", json_body)


@pytest.fixture
def setup(
    start_service: Callable[..., ServiceProcess], serve: Serve, database_url: str
) -> Iterator[Setup]:
    sim = serve_simtelegram(serve)
    botedge = start_service(
        "botedge",
        "--role",
        "api",
        env=service_env(database_url, TELEGRAM_API_BASE=sim.url, LOG_LEVEL="DEBUG"),
    )
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, BOTEDGE_URL=botedge.url)
    with serve_in_thread(create_app(settings)) as panel:
        owner = HTTP.post(
            f"{panel}/v1/auth/login", json={"email": "owner@example.com", "password": PASSWORD}
        ).json()["access_token"]
        yield Setup(panel, owner, botedge, sim)


def every_table_as_text(database_url: str) -> str:
    with psycopg.connect(database_url) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        ]
        return "\n".join(
            row[0]
            for table in tables
            for row in conn.execute(f'SELECT row_to_json(t)::text FROM "{table}" t').fetchall()
        )


def test_bots__added_through_botedge_and_the_token_is_nowhere(
    setup: Setup, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = new_token(9701)
    added = setup.call("POST", "/v1/bots", {"token": token, "mode": "polling"})
    assert added.status_code == 201, added.text
    listed = setup.call("GET", "/v1/bots")
    assert listed.status_code == 200
    [bot] = listed.json()["items"]
    assert (bot["telegram_bot_id"], bot["token"], bot["status"]) == (
        9701,
        "..." + token[-4:],
        "active",
    )
    for text in (added.text, listed.text, every_table_as_text(database_url)):
        assert token not in text
        assert token.split(":", 1)[1] not in text
    assert token not in caplog.text
    assert token not in setup.botedge.output()
    audit = setup.call("GET", "/v1/audit?action=bots.add").json()["items"]
    assert [entry["target"] for entry in audit] == [f"bot:{bot['id']}"]


@pytest.mark.parametrize("kind", ["not shaped like a token", "revoked in Telegram"])
def test_bots__a_token_refused_at_its_field_or_botedges_refusal_unchanged(
    setup: Setup, kind: str
) -> None:
    token = "123:short"
    if kind == "revoked in Telegram":
        token = new_token(9703)
        HTTP.post(f"{setup.sim.url}/_sim/bots", json={"token": token}).raise_for_status()
        HTTP.post(f"{setup.sim.url}/_sim/bots/9703/revoke").raise_for_status()
    refused = setup.call("POST", "/v1/bots", {"token": token})
    assert refused.status_code == 422
    assert refused.headers["content-type"] == "application/problem+json"
    if kind == "revoked in Telegram":
        assert refused.json()["type"] == "/problems/bad-bot-token"
    else:
        # The shape is in the panel's schema: refused before botedge is asked.
        assert refused.json()["errors"] == [{"field": "token", "code": "bad-format"}]
    assert setup.call("GET", "/v1/bots").json()["items"] == []


def test_dead_updates__listed_with_a_cursor_and_replayed(setup: Setup, database_url: str) -> None:
    bot, _, _ = insert_bot(database_url, 9702)
    with psycopg.connect(database_url) as conn:
        for update_id in (1, 2, 3):
            conn.execute(
                "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload, state, attempt,"
                " done_at, last_error) VALUES (%s, %s, 5, 'message', %s, 'dead', 5, now(), 'x')",
                (bot, update_id, json.dumps({"update_id": update_id})),
            )
    first = setup.call("GET", "/v1/dead-updates?limit=2").json()
    second = setup.call("GET", f"/v1/dead-updates?limit=2&cursor={first['next_cursor']}").json()
    ids = [item["id"] for item in first["items"] + second["items"]]
    assert len(ids) == 3 and second["next_cursor"] is None
    # Each with the update as it came, so the owner can read what a replay runs again.
    payloads = [item["payload"] for item in first["items"] + second["items"]]
    assert sorted(p["update_id"] for p in payloads) == [1, 2, 3]
    assert setup.call("POST", f"/v1/dead-updates/{ids[0]}/replay").status_code == 200
    again = setup.call("POST", f"/v1/dead-updates/{ids[0]}/replay")
    assert (again.status_code, again.json()["type"]) == (404, "/problems/not-dead")


def test_bots__paused_resumed_and_removed_through_botedge_and_written_in_the_audit_log(
    setup: Setup, database_url: str
) -> None:
    token = new_token(9704)
    added = setup.call("POST", "/v1/bots", {"token": token, "mode": "polling"})
    bot = added.json()["id"]

    def status() -> tuple[str, bool]:
        [listed] = setup.call("GET", "/v1/bots").json()["items"]
        return listed["status"], listed["removed_at"] is not None

    def deletes() -> int:
        calls = HTTP.get(f"{setup.sim.url}/_sim/calls", params={"method": "deleteWebhook"})
        return len(calls.json())

    paused = setup.call("POST", f"/v1/bots/{bot}/pause")
    assert (paused.status_code, paused.json()["status"]) == (200, "paused")
    assert status() == ("paused", False)
    # Resuming points Telegram at us again before the bot is active.
    before = deletes()
    resumed = setup.call("POST", f"/v1/bots/{bot}/resume")
    assert (resumed.status_code, resumed.json()["status"]) == (200, "active")
    assert deletes() == before + 1 and status() == ("active", False)

    # A problem of a removed bot is nobody's to look at.
    with psycopg.connect(database_url) as conn:
        conn.execute("UPDATE bots SET last_error = '401: Unauthorized' WHERE id = %s", (bot,))
    assert setup.call("GET", "/v1/dashboard").json()["bots_with_problems"] == 1
    removed = setup.call("POST", f"/v1/bots/{bot}/remove")
    assert (removed.status_code, removed.json()["status"]) == (200, "removed")
    assert deletes() == before + 2 and status() == ("removed", True)
    assert setup.call("GET", "/v1/dashboard").json()["bots_with_problems"] == 0
    for change in ("pause", "resume"):
        refused = setup.call("POST", f"/v1/bots/{bot}/{change}")
        assert (refused.status_code, refused.json()["type"]) == (409, "/problems/bot-removed")
    assert setup.call("POST", "/v1/bots/999999/pause").status_code == 404

    audit = setup.call("GET", f"/v1/audit?kind=bots&target=bot:{bot}").json()["items"]
    assert [entry["action"] for entry in audit] == [
        "bots.remove",
        "bots.resume",
        "bots.pause",
        "bots.add",
    ]
    # Its token brings it back.
    again = setup.call("POST", "/v1/bots", {"token": token, "mode": "polling"})
    assert again.status_code == 201 and again.json()["id"] == bot
    assert status() == ("active", False)


def test_bots__an_editor_may_not_pause_resume_or_remove(setup: Setup) -> None:
    bot = setup.call("POST", "/v1/bots", {"token": new_token(9705), "mode": "polling"}).json()
    team = {"email": "ed@example.com", "role": "editor", "password": PASSWORD}
    assert setup.call("POST", "/v1/team", team).status_code == 201
    editor = HTTP.post(
        f"{setup.panel}/v1/auth/login", json={"email": "ed@example.com", "password": PASSWORD}
    ).json()["access_token"]
    for change in ("pause", "resume", "remove"):
        refused = call_as(editor, "POST", f"{setup.panel}/v1/bots/{bot['id']}/{change}")
        assert refused.status_code == 403, change
    assert setup.call("GET", "/v1/bots").json()["items"][0]["status"] == "active"
