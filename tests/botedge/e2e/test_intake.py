"""POST /telegram/{bot_id}/webhook on a real api process."""

from __future__ import annotations

import json

import httpx

from tests.botedge.conftest import message
from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP


def post(edge: Edge, bot_id: int, secret: str | None, body: bytes) -> httpx.Response:
    assert edge.api is not None
    headers: dict[str, bytes] = {"content-type": b"application/json"}
    if secret is not None:
        headers["X-Telegram-Bot-Api-Secret-Token"] = secret.encode()
    return HTTP.post(f"{edge.api.url}/telegram/{bot_id}/webhook", content=body, headers=headers)


def test_webhook__stores_once_and_refuses_strangers(edge: Edge) -> None:
    bot_id, _, secret = edge.add_bot(7001)
    paused, _, paused_secret = edge.add_bot(7002)
    edge.query("UPDATE bots SET status = 'paused' WHERE id = %s RETURNING id", paused)
    edge.start_api()
    update = json.dumps(message(1, 42, "hello")).encode()

    assert post(edge, bot_id, secret, update).status_code == 200
    # A redelivery is answered 200 and adds nothing.
    assert post(edge, bot_id, secret, update).status_code == 200
    assert edge.query("SELECT count(*) FROM inbox") == [(1,)]

    unknown = post(edge, 999, secret, update)
    assert (unknown.status_code, unknown.json()["type"]) == (404, "/problems/unknown-bot")
    assert post(edge, paused, paused_secret, update).status_code == 404
    for wrong in (None, "", secret + "x", "ü" * 10):
        response = post(edge, bot_id, wrong, update)
        assert response.status_code == 401
        assert response.headers["content-type"] == "application/problem+json"
    too_big = post(edge, bot_id, secret, b'{"update_id": 5, "pad": "' + b"x" * 1_100_000 + b'"}')
    assert too_big.status_code == 413
    assert edge.query("SELECT count(*) FROM inbox") == [(1,)]


def test_webhook__malformed_and_other_kinds_are_200_and_not_stored(edge: Edge) -> None:
    bot_id, _, secret = edge.add_bot(7003)
    edge.start_api()
    bodies = [
        b"{not json",
        b"[]",
        b'{"update_id": -4, "message": {"chat": {"id": 1}}}',
        b'{"update_id": "9", "message": {"chat": {"id": 1}}}',
        b'{"update_id": 10, "message": {"chat": {}}}',
        b'{"update_id": 11, "edited_message": {"chat": {"id": 1}}}',
        b'{"update_id": 12, "poll": {"id": "p"}}',
    ]
    for body in bodies:
        assert post(edge, bot_id, secret, body).status_code == 200
    assert edge.query("SELECT count(*) FROM inbox") == [(0,)]
    assert edge.api is not None
    metrics = HTTP.get(f"{edge.api.url}/metrics").text
    assert 'botedge_webhook_updates_total{result="malformed"} 5.0' in metrics
    assert 'botedge_ignored_updates_total{kind="edited_message"} 1.0' in metrics
    assert 'botedge_ignored_updates_total{kind="poll"} 1.0' in metrics


def test_webhook__bodies_that_could_not_come_from_telegram_are_200_dropped_and_counted(
    edge: Edge,
) -> None:
    bot_id, _, secret = edge.add_bot(7004)
    edge.start_api()

    def msg(**fields: object) -> dict[str, object]:
        body = message(20, 42, "hi")
        body["message"] = {**body["message"], **fields}  # type: ignore[dict-item]
        return body

    too_long = "é" * 4000 + "😀" * 50  # 4,100 UTF-16 units, 4,050 characters
    bodies = [
        json.dumps(msg(text="\ud800")).encode(),
        b'{"update_id": 9223372036854775808, "message": {"chat": {"id": 1}}}',
        json.dumps(msg(chat={"id": 2**63, "type": "private"})).encode(),
        b'{"update_id": 21, "message": {"chat": {"id": 1}}, "pad": '
        + b"[" * 5000
        + b"]" * 5000
        + b"}",
        json.dumps(
            {**message(22, 42, "hi"), "callback_query": {"id": "c", "from": {"id": 42}}}
        ).encode(),
        json.dumps(msg(text=too_long)).encode(),
        json.dumps(msg(caption=too_long, text=None)).encode(),
        b'{"update_id": 23, "message": {"chat": {"id": 1}, "x": NaN}}',
    ]
    for body in bodies:
        response = post(edge, bot_id, secret, body)
        assert response.status_code == 200, response.text
        assert response.json()["dropped"] == "malformed"
    assert edge.query("SELECT count(*) FROM inbox") == [(0,)]
    assert edge.api is not None
    metrics = HTTP.get(f"{edge.api.url}/metrics").text
    assert f'botedge_webhook_updates_total{{result="malformed"}} {len(bodies)}.0' in metrics
    assert 'status="500"' not in metrics
    assert '"level": "ERROR"' not in edge.api.output()
    # Exactly at the limit is a real message: stored.
    at_limit = json.dumps(msg(text="a" * 4096)).encode()
    assert post(edge, bot_id, secret, at_limit).status_code == 200
    assert edge.query("SELECT count(*) FROM inbox") == [(1,)]
