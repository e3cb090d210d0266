"""Registering a bot in webhook mode: the simulated Telegram then delivers to our webhook."""

from __future__ import annotations

import signal

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
    assert (bad.status_code, bad.json()["type"]) == (422, "/problems/invalid-body")
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

    # Its commands and descriptions, in each language the bot speaks and English for the rest.
    def asked(method: str, **params: str) -> object:
        return HTTP.post(f"{edge.sim.url}/bot{token}/{method}", json=params).json()["result"]

    default = asked("getMyCommands")
    assert [c["command"] for c in default] == ["start", "link", "ads", "language"]
    assert default[3]["description"] == "Choose the language I write in"
    assert asked("getMyCommands", language_code="fa")[3]["description"] == (
        "انتخاب زبانی که با شما می‌نویسم"
    )
    assert asked("getMyCommands", language_code="de") == default
    assert asked("getMyShortDescription", language_code="ru") == {
        "short_description": "Платные каналы, материалы и реклама — на вашем языке."
    }
    assert asked("getMyDescription")["description"].startswith("I open paid channels")
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
        "123:" + "A" * 35 + "é",
        # A NUL no text column can hold: refused with every body, at its field.
        "123:" + "A" * 39 + "\u0000",
    ],
)
def test_register__token_of_the_wrong_shape_is_422_before_any_call(edge: Edge, token: str) -> None:
    api = edge.start_api()
    auth = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
    response = HTTP.post(f"{api.url}/internal/bots", json={"token": token}, headers=auth)
    # The shape is in the schema: refused as the body is read, at its field.
    assert (response.status_code, response.json()["type"]) == (422, "/problems/invalid-body")
    assert response.json()["errors"] == [{"field": "token", "code": "bad-format"}]
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


def test_pause__the_webhook_refuses_until_resumed_and_what_telegram_held_is_answered_once(
    edge: Edge,
) -> None:
    port = free_port()
    api = edge.start_api(port=port, PUBLIC_BASE_URL=f"http://127.0.0.1:{port}")
    edge.start_worker()
    token = new_token(9604)
    auth = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
    created = HTTP.post(
        f"{api.url}/internal/bots", json={"token": token, "mode": "webhook"}, headers=auth
    )
    bot = created.json()["id"]
    webhook = f"{api.url}/telegram/{bot}/webhook"
    paused = HTTP.post(f"{api.url}/internal/bots/{bot}/pause", headers=auth)
    assert (paused.status_code, paused.json()["status"]) == (200, "paused")
    # Unknown while paused, whatever the secret: Telegram keeps the update and retries.
    refused = HTTP.post(
        webhook, json={"update_id": 1}, headers={"x-telegram-bot-api-secret-token": "x"}
    )
    assert (refused.status_code, refused.json()["type"]) == (404, "/problems/unknown-bot")
    edge.sim_post("/_sim/messages", {"token": token, "user_id": 7001, "text": "/start"})
    info = HTTP.post(f"{edge.sim.url}/bot{token}/getWebhookInfo").json()["result"]
    assert info["pending_update_count"] == 1
    assert edge.query("SELECT count(*) FROM inbox WHERE bot_id = %s", bot) == [(0,)]

    resumed = HTTP.post(f"{api.url}/internal/bots/{bot}/resume", headers=auth)
    assert (resumed.status_code, resumed.json()["status"]) == (200, "active")
    # Known again: a wrong secret is now the refusal.
    wrong = HTTP.post(
        webhook, json={"update_id": 1}, headers={"x-telegram-bot-api-secret-token": "x"}
    )
    assert wrong.status_code == 401
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9604)) == 1, 20, "the answer")
    assert edge.query("SELECT count(*) FROM inbox WHERE bot_id = %s", bot) == [(1,)]


def test_remove__deletes_the_webhook_and_the_bot_is_served_nowhere(edge: Edge) -> None:
    port = free_port()
    api = edge.start_api(port=port, PUBLIC_BASE_URL=f"http://127.0.0.1:{port}")
    token = new_token(9605)
    auth = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
    bot = HTTP.post(
        f"{api.url}/internal/bots", json={"token": token, "mode": "webhook"}, headers=auth
    ).json()["id"]
    assert HTTP.post(f"{edge.sim.url}/bot{token}/getWebhookInfo").json()["result"]["url"]
    # Telegram unreachable: nothing changes, and the owner may try again.
    edge.sim_post("/_sim/faults", {"rate_5xx": 1.0})
    down = HTTP.post(f"{api.url}/internal/bots/{bot}/remove", headers=auth)
    assert (down.status_code, down.json()["type"]) == (503, "/problems/telegram-unavailable")
    assert edge.query("SELECT status FROM bots") == [("active",)]
    edge.sim_post("/_sim/faults", {"rate_5xx": 0.0})
    removed = HTTP.post(f"{api.url}/internal/bots/{bot}/remove", headers=auth)
    assert (removed.status_code, removed.json()["status"]) == (200, "removed")
    assert HTTP.post(f"{edge.sim.url}/bot{token}/getWebhookInfo").json()["result"]["url"] == ""
    assert edge.query("SELECT status, removed_at IS NOT NULL FROM bots") == [("removed", True)]
    assert HTTP.post(f"{api.url}/telegram/{bot}/webhook", json={}).status_code == 404
    # Removing again is the same answer; a token Telegram no longer takes is removed too.
    assert HTTP.post(f"{api.url}/internal/bots/{bot}/remove", headers=auth).status_code == 200
    revoked = new_token(9606)
    other = HTTP.post(
        f"{api.url}/internal/bots", json={"token": revoked, "mode": "webhook"}, headers=auth
    ).json()["id"]
    HTTP.post(f"{edge.sim.url}/_sim/bots/9606/revoke").raise_for_status()
    gone = HTTP.post(f"{api.url}/internal/bots/{other}/remove", headers=auth)
    assert (gone.status_code, gone.json()["status"]) == (200, "removed")


def test_public_base_url_moved__the_api_points_every_webhook_bot_at_the_new_address(
    edge: Edge,
) -> None:
    """The operator moves PUBLIC_BASE_URL (another host, a proxy in front) and restarts the
    api: each active webhook bot is told the new address once, a polling one is left alone."""
    port = free_port()
    api = edge.start_api(port=port, PUBLIC_BASE_URL=f"http://127.0.0.1:{port}")
    auth = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
    tokens = {mode: new_token(number) for mode, number in (("webhook", 9611), ("polling", 9612))}
    ids = {}
    for mode, token in tokens.items():
        made = HTTP.post(
            f"{api.url}/internal/bots", json={"token": token, "mode": mode}, headers=auth
        )
        assert made.status_code == 201, made.text
        ids[mode] = made.json()["id"]
    api.signal(signal.SIGTERM)
    assert api.wait(timeout=20) == 0
    calls = len(edge.sim_get("/_sim/calls", method="setwebhook"))

    moved = free_port()
    edge.start_api(port=moved, PUBLIC_BASE_URL=f"http://127.0.0.1:{moved}")

    def url(token: str) -> str:
        return str(HTTP.post(f"{edge.sim.url}/bot{token}/getWebhookInfo").json()["result"]["url"])

    expected = f"http://127.0.0.1:{moved}/telegram/{ids['webhook']}/webhook"
    edge.wait_until(lambda: url(tokens["webhook"]) == expected, 20, "the webhook moved")
    assert url(tokens["polling"]) == ""
    assert len(edge.sim_get("/_sim/calls", method="setwebhook")) == calls + 1
    assert edge.query("SELECT mode, webhook_url FROM bots ORDER BY id") == [
        ("webhook", expected),
        ("polling", None),
    ]
    # Telegram delivers to the new address, and the bot answers.
    edge.start_worker()
    edge.sim_post("/_sim/messages", {"token": tokens["webhook"], "user_id": 7778, "text": "/start"})
    edge.wait_until(lambda: bool(edge.sim_get("/_sim/sent", bot_id=9611)), 20, "a reply")
