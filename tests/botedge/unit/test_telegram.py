"""The Bot API client against canned answers (httpx.MockTransport)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from botedge.telegram import (
    BadRequest,
    BotApi,
    Conflict,
    Forbidden,
    ServerError,
    TooManyRequests,
    Unauthorized,
)

TOKEN = "123456:" + "A" * 35


def call(handler: Any, method: str = "sendMessage") -> Any:
    async def run() -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await BotApi(client, "https://api.example").call(TOKEN, method, {"x": 1})

    return asyncio.run(run())


def answer(status: int, body: Any, headers: dict[str, str] | None = None) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == f"/bot{TOKEN}/sendMessage"
        assert request.headers["user-agent"].startswith("gatehouse-botedge/")
        return httpx.Response(status, json=body, headers=headers)

    return handler


def test_ok__unwraps_result() -> None:
    assert call(answer(200, {"ok": True, "result": {"message_id": 5}})) == {"message_id": 5}


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
    body = {"ok": False, "error_code": status, "description": description}
    with pytest.raises(kind) as error:
        call(answer(status, body))
    assert error.value.description == description


def test_429__retry_after_from_parameters_then_header() -> None:
    body = {
        "ok": False,
        "error_code": 429,
        "description": "Too Many Requests: retry after 7",
        "parameters": {"retry_after": 7},
    }
    with pytest.raises(TooManyRequests) as error:
        call(answer(429, body, {"Retry-After": "99"}))
    assert error.value.retry_after == 7
    bare = {"ok": False, "error_code": 429, "description": "Too Many Requests: retry after 3"}
    with pytest.raises(TooManyRequests) as error:
        call(answer(429, bare, {"Retry-After": "3"}))
    assert error.value.retry_after == 3


def test_not_modified__recognised_by_substring() -> None:
    body = {
        "ok": False,
        "error_code": 400,
        "description": "Bad Request: message is not "
        "modified: specified new message content and reply markup are exactly the same",
    }
    with pytest.raises(BadRequest) as error:
        call(answer(400, body))
    assert error.value.not_modified


def test_html_gateway_page__server_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html>502 Bad Gateway</html>")

    with pytest.raises(ServerError):
        call(handler)


def test_timeout__server_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(ServerError, match="timed out"):
        call(handler)
