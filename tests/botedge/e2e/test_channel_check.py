"""`POST /internal/channels/check`: every way an owner names a channel, and what Telegram says
of the bot's rights there, written to `channels` and `bot_channels`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP, SECRETS

NEWS = -1001000000201
AUTH = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}


def check(edge: Edge, body: dict[str, Any]) -> httpx.Response:
    assert edge.api is not None
    return HTTP.post(f"{edge.api.url}/internal/channels/check", json=body, headers=AUTH, timeout=30)


@pytest.fixture
def ready(edge: Edge) -> tuple[Edge, int]:
    bot_id, _, _ = edge.add_bot(5550201)
    edge.sim_post(
        "/_sim/chats",
        {
            "id": NEWS,
            "type": "channel",
            "title": "News",
            "username": "news_one",
            "admin_bots": [5550201],
        },
    )
    edge.start_api()
    return edge, bot_id


@pytest.mark.parametrize(
    "chat",
    [
        "@news_one",
        "https://t.me/news_one",
        "t.me/news_one/15",
        "http://telegram.me/news_one/",
        str(NEWS),
        "https://t.me/c/1000000201/7",
        "  @news_one  ",
    ],
)
def test_check__each_form_finds_the_channel_and_the_bots_rights(
    ready: tuple[Edge, int], chat: str
) -> None:
    edge, bot_id = ready
    answer = check(edge, {"bot_id": bot_id, "chat": chat})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["chat"]["telegram_chat_id"], body["chat"]["title"], body["chat"]["type"]) == (
        NEWS,
        "News",
        "channel",
    )
    assert body["rights"] == {
        "status": "administrator",
        "is_admin": True,
        "can_invite_users": True,
        "can_restrict_members": True,
        "last_error": None,
    }
    assert edge.query(
        "SELECT c.username, c.chat_type, bc.is_admin, bc.can_restrict_members"
        " FROM bot_channels bc JOIN channels c ON c.id = bc.channel_id WHERE bc.bot_id = %s",
        bot_id,
    ) == [("news_one", "channel", True, True)]


@pytest.mark.parametrize(
    "chat",
    [
        "news one",
        "@ab",
        "https://t.me/+AbCdEfGh123",
        "https://t.me/joinchat/AbCdEfGh123",
        "t.me/joinchat",
        "https://example.com/news_one",
        "-",
        "1" * 40,
    ],
)
def test_check__what_names_no_chat_is_422(ready: tuple[Edge, int], chat: str) -> None:
    edge, bot_id = ready
    answer = check(edge, {"bot_id": bot_id, "chat": chat})
    assert answer.status_code == 422, answer.text
    # Refused by the schema's pattern as the body is read, or by the parse after it (a link
    # of the right shape that names no chat: t.me/joinchat).
    assert answer.json()["type"] in ("/problems/invalid-body", "/problems/invalid-values")
    assert answer.headers["content-type"] == "application/problem+json"


def test_check__refusals(ready: tuple[Edge, int]) -> None:
    edge, bot_id = ready
    missing = check(edge, {"bot_id": bot_id, "chat": "@nosuch_channel"})
    assert (missing.status_code, missing.json()["type"]) == (404, "/problems/chat-not-found")
    assert check(edge, {"bot_id": 99999, "chat": "@news_one"}).status_code == 404
    assert check(edge, {"bot_id": bot_id}).status_code == 422
    assert check(edge, {"bot_id": bot_id, "chat": ""}).status_code == 422
    assert edge.api is not None
    unauthenticated = HTTP.post(
        f"{edge.api.url}/internal/channels/check", json={"bot_id": bot_id, "chat": "@news_one"}
    )
    assert unauthenticated.status_code == 401
    edge.sim_post("/_sim/faults", {"rate_5xx": 1.0})
    down = check(edge, {"bot_id": bot_id, "chat": "@news_one"})
    assert (down.status_code, down.json()["type"]) == (503, "/problems/telegram-unavailable")
    assert edge.query("SELECT count(*) FROM bot_channels") == [(0,)]


def test_check__a_channel_the_bot_is_not_in_is_saved_flagged(ready: tuple[Edge, int]) -> None:
    edge, bot_id = ready
    edge.sim_post("/_sim/chats", {"id": -1001000000202, "type": "channel", "username": "other_ch"})
    answer = check(edge, {"bot_id": bot_id, "chat": "@other_ch"})
    assert answer.status_code == 200, answer.text
    rights = answer.json()["rights"]
    assert (rights["is_admin"], rights["last_error"]) == (
        False,
        "Forbidden: bot is not a member of the channel chat",
    )
    assert edge.query("SELECT is_admin, last_error IS NOT NULL FROM bot_channels") == [
        (False, True)
    ]


def test_rights_watch__a_demoted_bot_is_seen_without_anyone_asking(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(5550202, mode="polling")
    edge.sim_post(
        "/_sim/chats", {"id": NEWS, "type": "channel", "title": "News", "admin_bots": [5550202]}
    )
    [(channel,)] = edge.query(
        "INSERT INTO channels (telegram_chat_id, title) VALUES (%s, 'News') RETURNING id", NEWS
    )
    edge.query(
        "INSERT INTO bot_channels (bot_id, channel_id, status, is_admin, can_invite_users,"
        " can_restrict_members) VALUES (%s, %s, 'administrator', true, true, true)"
        " RETURNING bot_id",
        bot_id,
        channel,
    )
    edge.start_worker(RIGHTS_CHECK_INTERVAL="0.5")
    edge.wait_until(
        lambda: edge.query("SELECT checked_at IS NOT NULL FROM bot_channels") == [(True,)],
        30,
        "a first round",
    )
    # The owner takes the bot's admin rights away in Telegram.
    edge.sim_post("/_sim/faults", {"non_admin_chats": [NEWS]})
    edge.wait_until(
        lambda: (
            edge.query("SELECT status, is_admin, can_restrict_members FROM bot_channels")
            == [("member", False, False)]
        ),
        30,
        "the demotion seen",
    )
