"""Registering a bot in webhook mode: the simulated Telegram then delivers to our webhook."""

from __future__ import annotations

import pytest

from tests.botedge.conftest import new_token
from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP, SECRETS, free_port


def test_register_webhook_bot__telegram_delivers_and_the_bot_answers(edge: Edge) -> None:
    port = free_port()
    api = edge.start_api(port=port, PUBLIC_BASE_URL=f"http://127.0.0.1:{port}")
    edge.start_worker()
    token = new_token(9601)
    auth = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
    bad = HTTP.post(f"{api.url}/internal/bots", json={"token": "123:short"}, headers=auth)
    assert (bad.status_code, bad.json()["type"]) == (422, "/problems/bad-bot-token")
    created = HTTP.post(
        f"{api.url}/internal/bots", json={"token": token, "mode": "webhook"}, headers=auth
    )
    assert created.status_code == 201, created.text
    assert created.json()["telegram_bot_id"] == 9601
    stored = edge.query("SELECT token_encrypted FROM bots")[0][0]
    assert token not in stored
    info = HTTP.post(f"{edge.sim.url}/bot{token}/getWebhookInfo").json()["result"]
    assert info["url"] == f"http://127.0.0.1:{port}/telegram/{created.json()['id']}/webhook"
    assert set(info["allowed_updates"]) >= {"message", "callback_query", "chat_member"}
    edge.sim_post("/_sim/messages", {"token": token, "user_id": 7777, "text": "/start"})
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9601)) == 1, 20, "a reply")
    assert edge.sim_get("/_sim/sent", bot_id=9601)[0]["text"].startswith("Welcome")


@pytest.mark.parametrize(
    "token",
    [
        "123:short",
        "123:../../../getUpdates?x=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "123:/../" + "A" * 40,
        "abc:" + "A" * 40,
        "123:" + "A" * 39 + "\u0000",
        "123:" + "A" * 35 + "é",
    ],
)
def test_register__token_of_the_wrong_shape_is_422_before_any_call(edge: Edge, token: str) -> None:
    api = edge.start_api()
    auth = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
    response = HTTP.post(f"{api.url}/internal/bots", json={"token": token}, headers=auth)
    assert (response.status_code, response.json()["type"]) == (422, "/problems/bad-bot-token")
    assert edge.sim_get("/_sim/calls") == []
    assert edge.query("SELECT count(*) FROM bots") == [(0,)]


def test_register__webhook_telegram_refuses_is_502_and_no_active_bot(edge: Edge) -> None:
    api = edge.start_api(PUBLIC_BASE_URL="https://gatehouse.invalid")
    token = new_token(9602)
    auth = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
    response = HTTP.post(
        f"{api.url}/internal/bots", json={"token": token, "mode": "webhook"}, headers=auth
    )
    assert response.status_code == 502, response.text
    assert response.json()["type"] == "/problems/telegram-refused"
    assert "bad webhook" in response.json()["detail"]
    assert edge.query("SELECT status, last_error LIKE '400: %%' FROM bots") == [("paused", True)]


def test_register__the_same_bot_again_takes_its_username_as_telegram_now_gives_it(
    edge: Edge,
) -> None:
    """A bot's username can change (bought on Fragment, say); its links are built from it."""
    api = edge.start_api()
    token = new_token(9603)
    auth = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
    body = {"token": token, "mode": "polling"}
    first = HTTP.post(f"{api.url}/internal/bots", json=body, headers=auth)
    assert first.status_code == 201, first.text
    assert edge.query("SELECT username FROM bots") == [("sim9603_bot",)]
    edge.sim_post("/_sim/bots", {"token": token, "username": "renamed_bot"})
    again = HTTP.post(f"{api.url}/internal/bots", json=body, headers=auth)
    assert again.status_code in (200, 201), again.text
    assert edge.query("SELECT id, username FROM bots") == [(first.json()["id"], "renamed_bot")]
