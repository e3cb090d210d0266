"""The Bot API client (aiohttp, a session per bot) against a real server on loopback: what it
sends, the connections it keeps, and how it classifies what comes back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from botedge.telegram import (
    BadRequest,
    BotApi,
    BotClients,
    CircuitOpen,
    Conflict,
    Forbidden,
    ServerError,
    TelegramError,
    TooManyRequests,
    Unauthorized,
    counts_against_telegram,
    is_network_failure,
)
from tests.botedge.bot_api_server import Seen, http, ok, run

TOKEN = "123456:" + "A" * 35
OTHER = "654321:" + "B" * 35


def call(status: int, body: Any, *headers: str) -> Any:
    """sendMessage answered with `status`, a JSON `body` and `headers`."""
    reason = {200: "OK", 429: "Too Many Requests"}.get(status, "Status")
    result, server = run(
        lambda seen: http(f"{status} {reason}", json.dumps(body).encode(), *headers),
        lambda api: api.call(TOKEN, "sendMessage", {"x": 1}),
    )
    [seen] = server.seen
    assert seen.path == f"/bot{TOKEN}/sendMessage"
    return result


def raised(status: int, body: Any, *headers: str) -> Any:
    with pytest.raises(Exception) as error:
        call(status, body, *headers)
    return error.value


def test_ok__unwraps_result() -> None:
    assert call(200, {"ok": True, "result": {"message_id": 5}}) == {"message_id": 5}


@pytest.mark.parametrize(
    ("status", "description", "kind"),
    [
        (400, "Bad Request: chat not found", BadRequest),
        (401, "Unauthorized", Unauthorized),
        (404, "Not Found", Unauthorized),
        (403, "Forbidden: bot was blocked by the user", Forbidden),
        (409, "Conflict: terminated by other getUpdates request", Conflict),
        (500, "Internal Server Error: restart", ServerError),
    ],
)
def test_errors__classified_by_code(status: int, description: str, kind: type) -> None:
    error = raised(status, {"ok": False, "error_code": status, "description": description})
    assert type(error) is kind
    assert error.description == description


def test_429__retry_after_from_parameters_then_header() -> None:
    body = {
        "ok": False,
        "error_code": 429,
        "description": "Too Many Requests: retry after 7",
        "parameters": {"retry_after": 7},
    }
    error = raised(429, body, "Retry-After: 99")
    assert isinstance(error, TooManyRequests)
    assert error.retry_after == 7
    bare = {"ok": False, "error_code": 429, "description": "Too Many Requests: retry after 3"}
    error = raised(429, bare, "Retry-After: 3")
    assert isinstance(error, TooManyRequests)
    assert error.retry_after == 3


def test_not_modified__recognised_by_substring() -> None:
    body = {
        "ok": False,
        "error_code": 400,
        "description": "Bad Request: message is not "
        "modified: specified new message content and reply markup are exactly the same",
    }
    error = raised(400, body)
    assert isinstance(error, BadRequest)
    assert error.not_modified


def test_json_call__posts_the_parameters_and_unwraps_the_result() -> None:
    result, server = run(
        lambda seen: ok({"status": "left"}),
        lambda api: api.call(TOKEN, "getChatMember", {"chat_id": -100, "user_id": 7}),
    )
    assert result == {"status": "left"}
    [seen] = server.seen
    assert (seen.method, seen.path) == ("POST", f"/bot{TOKEN}/getChatMember")
    assert seen.headers["content-type"] == "application/json"
    assert seen.headers["user-agent"].startswith("gatehouse-botedge/")
    assert json.loads(seen.body) == {"chat_id": -100, "user_id": 7}


def test_calls__keep_one_connection_per_bot_alive() -> None:
    async def calls(api: BotApi) -> None:
        for token in (TOKEN, TOKEN, TOKEN, OTHER, OTHER):
            await api.call(token, "getMe")

    _, server = run(lambda seen: ok(True), calls)
    assert len(server.seen) == 5
    # Three calls of one bot on one connection, two of the other on a second.
    assert server.connections == 2


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            lambda seen: http("502 Bad Gateway", b"<html>502</html>", content_type="text/html"),
            "non-JSON answer (502)",
        ),
        (lambda seen: None, "getMe: timed out"),
    ],
    ids=["nginx-502", "no-answer"],
)
def test_unusable_answers__are_server_errors(
    answer: Callable[[Seen], bytes | None], expected: str
) -> None:
    async def calls(api: BotApi) -> Any:
        with pytest.raises(ServerError) as error:
            await api.call(TOKEN, "getMe", timeout=0.5)
        return error.value

    error, _ = run(answer, calls)
    assert error.description == expected


def test_refused_connection__is_a_server_error() -> None:
    async def main() -> ServerError:
        listening = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = listening.sockets[0].getsockname()[1]
        listening.close()
        await listening.wait_closed()
        async with BotClients() as clients:
            with pytest.raises(ServerError) as error:
                await BotApi(clients, f"http://127.0.0.1:{port}").call(TOKEN, "getMe")
        return error.value

    error = asyncio.run(main())
    assert error.description.startswith("getMe: Client")


# -- breakers: what counts as Telegram failing --------------------------------------------


@pytest.mark.parametrize(
    ("error", "counts"),
    [
        (BadRequest(400, "Bad Request: message text is empty"), False),
        (Unauthorized(401, "Unauthorized"), False),
        (Forbidden(403, "Forbidden: bot was blocked by the user"), False),
        (Conflict(409, "Conflict"), False),
        (TooManyRequests(429, "Too Many Requests", retry_after=3), False),
        (CircuitOpen(0, "not called", retry_after=1), False),
        (ServerError(502, "non-JSON answer (502)"), True),
        (ServerError(500, "Internal Server Error"), True),
        (ServerError(0, "getMe: timed out"), True),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else str(v),
)
def test_predicate__only_telegram_failing_counts(error: TelegramError, counts: bool) -> None:
    assert counts_against_telegram(error) is counts
    # No answer at all is the host's business; an answer is the bot's.
    assert is_network_failure(error) is (counts and error.code == 0)


def breaker_run(status: str, body: bytes, content_type: str, calls: int) -> tuple[Any, int]:
    """`calls` sendMessage calls answered alike, then one more; what the last raised and how
    many reached the server."""

    async def many(api: BotApi) -> Any:
        for _ in range(calls):
            with pytest.raises(TelegramError):
                await api.call(TOKEN, "sendMessage", {"x": 1})
        with pytest.raises(TelegramError) as last:
            await api.call(TOKEN, "sendMessage", {"x": 1})
        # Another bot's calls are not held up by this one's breaker.
        with pytest.raises(TelegramError) as other:
            await api.call(OTHER, "sendMessage", {"x": 1})
        assert not isinstance(other.value, CircuitOpen)
        return last.value

    error, server = run(lambda seen: http(status, body, content_type=content_type), many)
    return error, len(server.seen)


def test_breaker__a_400_of_our_making_never_opens_it() -> None:
    refusal = json.dumps({"ok": False, "error_code": 400, "description": "Bad Request: x"})
    error, reached = breaker_run("400 Bad Request", refusal.encode(), "application/json", 30)
    assert type(error) is BadRequest
    assert reached == 32


def test_breaker__ten_502s_in_a_window_open_it_and_the_next_call_is_not_made() -> None:
    page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
    error, reached = breaker_run("502 Bad Gateway", page, "text/html", 10)
    assert isinstance(error, CircuitOpen)
    assert error.retry_after and error.retry_after > 0
    # Ten reached Telegram, the eleventh did not; the other bot's did.
    assert reached == 11
