"""Campaigns through the panel: the link made by botedge in the simulated Telegram, the refusals
at their fields, the counts and the days in the workspace's zone."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

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
from tests.panel_api.e2e.conftest import call_as, sign_in

PASSWORD = "correct horse battery"
PRIVATE, PUBLIC, ELSEWHERE = -1001000000801, -1001000000802, -1001000000803


@dataclass
class Panel:
    url: str
    tokens: dict[str, str]
    bot: int
    channels: dict[int, int]
    database_url: str

    def call(self, method: str, path: str, body: Any = None, role: str = "owner") -> httpx.Response:
        return call_as(self.tokens[role], method, f"{self.url}{path}", body)

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.database_url) as conn:
            return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]


@pytest.fixture
def panel(serve: Serve, database_url: str) -> Iterator[Panel]:
    sim = serve_simtelegram(serve)
    botedge = serve_botedge_api(serve, database_url, TELEGRAM_API_BASE=sim.url)
    bot, _, _ = insert_bot(database_url)
    channels = {}
    for chat, username, admins in (
        (PRIVATE, None, [5550001]),
        (PUBLIC, "open_sponsor", [5550001]),
        (ELSEWHERE, None, []),
    ):
        HTTP.post(
            f"{sim.url}/_sim/chats",
            json={
                "id": chat,
                "type": "channel",
                "title": f"Chat {chat}",
                "username": username,
                "admin_bots": admins,
            },
        ).raise_for_status()
        with psycopg.connect(database_url) as conn:
            row = conn.execute(
                "INSERT INTO channels (telegram_chat_id, title, username) VALUES (%s, %s, %s)"
                " RETURNING id",
                (chat, f"Chat {chat}", username),
            ).fetchone()
            assert row is not None
            channels[chat] = int(row[0])
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, BOTEDGE_URL=botedge.url)
    with serve_in_thread(create_app(settings)) as url:
        owner = sign_in(url, "owner@example.com", PASSWORD)
        tokens = {"owner": owner}
        for role in ("editor", "viewer"):
            added = call_as(
                owner,
                "POST",
                f"{url}/v1/team",
                {"email": f"{role}@example.com", "role": role, "password": PASSWORD},
            )
            assert added.status_code == 201, added.text
            tokens[role] = sign_in(url, f"{role}@example.com", PASSWORD)
        yield Panel(url, tokens, bot, channels, database_url)


def new(panel: Panel, name: str, chat: int = PRIVATE, role: str = "editor") -> httpx.Response:
    body = {"name": name, "bot_id": panel.bot, "channel_id": panel.channels[chat]}
    return panel.call("POST", "/v1/campaigns", body, role)


def refused_at(answer: httpx.Response) -> list[dict[str, str]]:
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    return list(answer.json()["errors"])


def test_campaign__an_editor_starts_one_and_everyone_sees_its_link(panel: Panel) -> None:
    made = new(panel, "Spring sponsor")
    assert made.status_code == 201, made.text
    campaign = made.json()
    assert campaign["invite_link"].startswith("https://t.me/+")
    assert (campaign["name"], campaign["public"], campaign["warning"]) == (
        "Spring sponsor",
        False,
        None,
    )
    assert (campaign["joins"], campaign["leaves"], campaign["net"]) == (0, 0, 0)
    listed = panel.call("GET", "/v1/campaigns", role="viewer")
    assert [c["invite_link"] for c in listed.json()["items"]] == [campaign["invite_link"]]
    [(action, target)] = panel.query(
        "SELECT action, target FROM audit_log WHERE action LIKE 'campaigns.%%'"
    )
    assert (action, target) == ("campaigns.add", f"campaign:{campaign['id']}")

    assert new(panel, "Viewer's", role="viewer").status_code == 403
    public = new(panel, "Public one", PUBLIC)
    assert public.status_code == 201, public.text
    assert public.json()["public"] is True
    assert "public" in public.json()["warning"]


def test_campaign__refusals_name_their_field(panel: Panel) -> None:
    assert refused_at(new(panel, "x" * 33)) == [{"field": "name", "code": "too-long"}]
    # 16 emoji are 32 UTF-16 units, as Telegram counts: accepted; 17 are not.
    assert new(panel, "\U0001f680" * 16).status_code == 201
    assert refused_at(new(panel, "\U0001f680" * 17)) == [{"field": "name", "code": "too-long"}]
    assert refused_at(new(panel, "   ")) == [{"field": "name", "code": "required"}]
    assert new(panel, "Taken").status_code == 201
    assert refused_at(new(panel, "Taken")) == [{"field": "name", "code": "taken"}]
    # The same name on another channel is another campaign.
    assert new(panel, "Taken", PUBLIC).status_code == 201
    assert refused_at(new(panel, "No rights", ELSEWHERE)) == [
        {"field": "bot_id", "code": "no-rights"}
    ]
    missing = panel.call(
        "POST", "/v1/campaigns", {"name": "N", "bot_id": panel.bot, "channel_id": 2**31 - 1}
    )
    assert refused_at(missing) == [{"field": "channel_id", "code": "not-found"}]
    panel.query("UPDATE bots SET status = 'paused' WHERE id = %s RETURNING id", panel.bot)
    assert refused_at(new(panel, "Paused bot")) == [{"field": "bot_id", "code": "invalid"}]
    # Nothing half-written: only the accepted ones are there.
    assert panel.query("SELECT count(*) FROM campaigns")[0][0] == 3


def test_campaign__counts_and_days_in_the_workspace_zone(panel: Panel) -> None:
    made = new(panel, "Counted").json()
    assert panel.call("PATCH", "/v1/workspace", {"time_zone": "Asia/Tehran"}).status_code == 200
    tehran = ZoneInfo("Asia/Tehran")
    today = dt.datetime.now(tehran).date()
    # Ten minutes into Tehran's day: still the day before in UTC (UTC+3:30).
    start = dt.datetime.combine(today, dt.time(0, 10), tehran)
    people = panel.query(
        "INSERT INTO people (telegram_user_id, first_name) SELECT g, 'P' FROM"
        " generate_series(7001, 7004) g RETURNING id"
    )
    times = [
        (start, None),
        (start, start + dt.timedelta(minutes=5)),
        (start - dt.timedelta(days=2), None),
        (start - dt.timedelta(days=40), start - dt.timedelta(days=1)),
    ]
    for (person,), (joined, left) in zip(people, times, strict=True):
        panel.query(
            "INSERT INTO campaign_joins (campaign_id, person_id, joined_at, left_at)"
            " VALUES (%s, %s, %s, %s) RETURNING 1",
            made["id"],
            person,
            joined,
            left,
        )
    detail = panel.call("GET", f"/v1/campaigns/{made['id']}", role="viewer").json()
    assert (detail["campaign"]["joins"], detail["campaign"]["leaves"]) == (4, 2)
    assert detail["campaign"]["net"] == 2
    days = {d["day"]: (d["joins"], d["leaves"]) for d in detail["days"]}
    assert len(days) == 30
    assert max(days) == today.isoformat()
    assert days[today.isoformat()] == (2, 1)
    assert days[(today - dt.timedelta(days=1)).isoformat()] == (0, 1)
    assert days[(today - dt.timedelta(days=2)).isoformat()] == (1, 0)
    # The join 40 days ago is counted in the totals, not in the 30 days.
    assert sum(j for j, _ in days.values()) == 3

    by_net = panel.call("GET", "/v1/campaigns?sort=-net&limit=1").json()
    assert by_net["items"][0]["id"] == made["id"]
    assert panel.call("GET", "/v1/campaigns/2147483647").status_code == 404
    assert panel.call("GET", "/v1/campaigns/99999999999").status_code == 404
