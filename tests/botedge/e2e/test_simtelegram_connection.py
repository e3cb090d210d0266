"""The simulated Telegram answers Bot API calls on the connection itself, ahead of the ASGI
app: what a client sees must not change. Raw sockets, so the bytes on the wire are checked."""

from __future__ import annotations

import asyncio
import json
import math
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import pytest

from shared.testing import serve_in_thread
from simulators.telegram.app import create_app
from simulators.telegram.exchange import Ticks
from simulators.telegram.state import Faults
from tests.botedge.conftest import new_token
from tests.conftest import HTTP, wait_until


@pytest.fixture
def sim() -> Iterator[tuple[str, str]]:
    with serve_in_thread(create_app()) as url:
        token = new_token(7700001)
        HTTP.post(f"{url}/_sim/bots", json={"token": token}).raise_for_status()
        yield url, token


# How far the wall clock may drift from the monotonic one over a wait here.
SLEW = 0.002


def _request(method: str, target: str, body: bytes = b"", version: str = "1.1") -> bytes:
    head = f"{method} {target} HTTP/{version}\r\nHost: sim\r\nUser-Agent: raw-test\r\n"
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


def _answers(conn: socket.socket, count: int) -> list[tuple[int, dict[str, str], Any]]:
    """`count` whole responses read off the connection, in the order they came."""
    data = b""
    found: list[tuple[int, dict[str, str], Any]] = []
    while len(found) < count:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            lines = data[:end].decode().split("\r\n")
            headers = dict(line.lower().split(": ", 1) for line in lines[1:])
            length = int(headers["content-length"])
            if len(data) >= end + 4 + length:
                body = data[end + 4 : end + 4 + length]
                found.append((int(lines[0].split()[1]), headers, json.loads(body)))
                data = data[end + 4 + length :]
                continue
        chunk = conn.recv(65536)
        assert chunk, f"closed after {len(found)} of {count} answers"
        data += chunk
    assert data == b""
    return found


def test_bot_api__pipelined_calls_answered_in_order_on_one_kept_alive_connection(
    sim: tuple[str, str],
) -> None:
    url, token = sim
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        # Three calls in one write: a JSON body, a query string and an unknown method.
        conn.sendall(
            _request("POST", f"/bot{token}/getMe", b"{}")
            + _request("GET", f"/bot{token}/getChatMember?chat_id=42&user_id=7")
            + _request("POST", f"/bot{token}/noSuchMethod", b'{"a": 1}')
        )
        first, second, third = _answers(conn, 3)
        assert first[0] == 200 and first[2]["result"]["is_bot"] is True
        assert first[1]["content-type"] == "application/json"
        assert "connection" not in first[1]
        assert second[0] == 400 and second[2]["description"].startswith("Bad Request: chat")
        assert third[0] == 404 and third[2] == {
            "ok": False,
            "error_code": 404,
            "description": "Not Found: method not found",
        }
        # Still open: a fourth call on the same connection.
        conn.sendall(_request("GET", f"/bot{token}/getMe"))
        assert _answers(conn, 1)[0][0] == 200
    calls = HTTP.get(f"{url}/_sim/calls").json()
    assert [c["method"] for c in calls] == ["getme", "getchatmember", "nosuchmethod", "getme"]
    assert {c["user_agent"] for c in calls} == {"raw-test"}


def test_bot_api__an_http_1_0_call_is_answered_and_its_connection_closed(
    sim: tuple[str, str],
) -> None:
    url, token = sim
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        conn.sendall(_request("POST", f"/bot{token}/getMe", b"{}", version="1.0"))
        [(status, headers, body)] = _answers(conn, 1)
        assert status == 200 and body["ok"] is True
        assert headers["connection"] == "close"
        assert conn.recv(1) == b""


def test_messages__a_json_batch_is_answered_by_the_connection_as_the_app_answers_it(
    sim: tuple[str, str],
) -> None:
    url, token = sim
    bot_id = int(token.split(":")[0])
    parts = urlsplit(url)
    batch = {"messages": [{"bot_id": bot_id, "user_id": 7 + n, "text": "/start"} for n in range(3)]}
    bodies = [
        json.dumps(batch).encode(),
        b"{",
        json.dumps({"bot_id": 1, "user_id": 1}).encode(),
        json.dumps({"bot_id": bot_id}).encode(),
    ]
    answers = []
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        # One at a time: a request pipelined behind another goes on to the app.
        for body in bodies:
            conn.sendall(_request("POST", "/_sim/messages", body))
            answers.extend(_answers(conn, 1))
    added, malformed, unknown, missing = answers
    # Answered by the connection: the app's middleware would have given each a request id.
    assert not [headers for _, headers, _ in answers if "x-request-id" in headers]
    assert added[0] == 200 and len(added[2]["update_ids"]) == 3
    assert (malformed[0], malformed[1]["content-type"]) == (400, "application/problem+json")
    assert malformed[2]["type"] == "/problems/malformed-json"
    assert unknown[0] == 404 and unknown[2]["description"].startswith("Not Found: no bot")
    assert (missing[0], missing[2]["type"]) == (422, "/problems/invalid-values")
    # The same three people's updates, in order, as the app's route would have added them.
    updates = HTTP.get(f"{url}/bot{token}/getUpdates").json()["result"]
    assert [u["update_id"] for u in updates] == added[2]["update_ids"]
    assert [u["message"]["from"]["id"] for u in updates] == [7, 8, 9]
    # Form fields go on to the app's route.
    one = HTTP.post(
        f"{url}/_sim/messages", data={"bot_id": str(bot_id), "user_id": "10", "text": "hi"}
    )
    assert one.status_code == 200 and one.json()["message"]["from"]["id"] == 10


def test_delay__a_call_is_applied_and_answered_only_once_its_delay_is_over() -> None:
    # Answered from a timer rather than a task: it must still be the method's effect, the
    # record and the answer that wait, not only the bytes.
    with serve_in_thread(create_app(Faults(enforce_limits=False, delay_ms=600))) as url:
        token = new_token(7700002)
        HTTP.post(f"{url}/_sim/bots", json={"token": token}).raise_for_status()
        parts = urlsplit(url)
        with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
            sent_at, sent_clock = time.time(), time.monotonic()
            conn.sendall(
                _request("POST", f"/bot{token}/sendMessage", b'{"chat_id": 42, "text": "hi"}')
            )
            wait_until(
                lambda: HTTP.get(f"{url}/_sim/inflight").json() == {"sendmessage": 1},
                5,
                "the call in flight",
            )
            # Still waiting, so not sent yet.
            assert HTTP.get(f"{url}/_sim/sent").json() == []
            [(status, _, body)] = _answers(conn, 1)
            answered = time.monotonic()
        assert status == 200 and body["result"]["text"] == "hi"
        assert answered - sent_clock >= 0.6
        [sent] = HTTP.get(f"{url}/_sim/sent").json()
        # The delay runs on the monotonic clock, the record's time is the wall clock's, which
        # NTP may slew by up to 0.05 %: a millisecond over this wait.
        assert sent["at"] - sent_at >= 0.6 - SLEW
        [record] = HTTP.get(f"{url}/_sim/calls").json()
        assert record["status"] == 200 and record["at"] - record["started"] >= 0.6


def test_delay__calls_due_within_one_tick_wait_on_one_timer_and_none_early() -> None:
    async def scheduled() -> tuple[int, list[float], float]:
        loop = asyncio.get_running_loop()
        ticks = Ticks()
        fired: list[float] = []
        started = loop.time()
        # Ten calls due at one moment in the middle of a tick, each asking from the time it
        # is made (the loop's clock moves between them on a busy machine).
        due = (math.ceil((started + 0.05) / Ticks.STEP) + 0.5) * Ticks.STEP
        for _ in range(10):
            ticks.call_later(due - loop.time(), lambda: fired.append(loop.time()))
        timers = len(ticks.due)
        await ticks.sleep(0.1)
        return timers, fired, started

    timers, fired, started = asyncio.run(scheduled())
    assert timers == 1
    # All ten in one pass of the timer's callback.
    assert len(fired) == 10 and max(fired) - min(fired) < 0.001
    # None early; at most a tick late, give or take the loop's clock (milliseconds).
    assert 0.05 <= fired[0] - started <= 0.05 + 2 * Ticks.STEP + 0.002


def test_delay__concurrent_calls_each_get_their_own_answer() -> None:
    with serve_in_thread(create_app(Faults(enforce_limits=False, delay_ms=100))) as url:
        token = new_token(7700003)
        HTTP.post(f"{url}/_sim/bots", json={"token": token}).raise_for_status()

        def one(chat: int) -> tuple[int, str]:
            result = HTTP.post(
                f"{url}/bot{token}/sendMessage", json={"chat_id": chat, "text": f"to {chat}"}
            ).json()["result"]
            return result["chat"]["id"], result["text"]

        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(one, range(1, 41)))
    assert answers == [(chat, f"to {chat}") for chat in range(1, 41)]
