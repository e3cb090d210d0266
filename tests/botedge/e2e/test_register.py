"""Registering a bot in webhook mode: the simulated Telegram then delivers to our webhook."""

from __future__ import annotations

import httpx

from tests.botedge.conftest import new_token
from tests.botedge.e2e.conftest import Edge
from tests.conftest import SECRETS, free_port


def test_register_webhook_bot__telegram_delivers_and_the_bot_answers(edge: Edge) -> None:
    port = free_port()
    api = edge.start_api(port=port, PUBLIC_BASE_URL=f"http://127.0.0.1:{port}")
    edge.start_worker()
    token = new_token(9601)
    auth = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
    bad = httpx.post(f"{api.url}/internal/bots", json={"token": "123:short"}, headers=auth)
    assert (bad.status_code, bad.json()["type"]) == (422, "/problems/bad-bot-token")
    created = httpx.post(
        f"{api.url}/internal/bots", json={"token": token, "mode": "webhook"}, headers=auth
    )
    assert created.status_code == 201, created.text
    assert created.json()["telegram_bot_id"] == 9601
    stored = edge.query("SELECT token_encrypted FROM bots")[0][0]
    assert token not in stored
    info = httpx.post(f"{edge.sim.url}/bot{token}/getWebhookInfo").json()["result"]
    assert info["url"] == f"http://127.0.0.1:{port}/telegram/{created.json()['id']}/webhook"
    assert set(info["allowed_updates"]) >= {"message", "callback_query", "chat_member"}
    edge.sim_post("/_sim/messages", {"token": token, "user_id": 7777, "text": "/start"})
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9601)) == 1, 20, "a reply")
    assert edge.sim_get("/_sim/sent", bot_id=9601)[0]["text"].startswith("Welcome")
