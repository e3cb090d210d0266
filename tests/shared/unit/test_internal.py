"""The one client every service asks another's internal endpoints with, over httpx's mock
transport: what it sends, and `Unreachable` for no answer and for an open breaker."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from shared.breaker import Breakers
from shared.internal import InternalClient, Unreachable
from shared.logging import request_id
from shared.settings import Secret

TOKEN = Secret("internal-token-0123456789")


def _client(handler: httpx.MockTransport, breakers: Breakers | None = None) -> InternalClient:
    http = httpx.AsyncClient(transport=handler)
    return InternalClient("billing", "http://billing.test/", TOKEN, breakers, http)


def test_request__sends_the_token_the_request_id_and_the_body_to_the_path() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(409, json={"detail": "no"})

    async def ask() -> httpx.Response:
        request_id.set("req-42")
        return await _client(httpx.MockTransport(answer)).request(
            "POST", "/internal/trials", json={"a": 1}
        )

    got = asyncio.run(ask())
    assert got.status_code == 409
    [sent] = seen
    assert str(sent.url) == "http://billing.test/internal/trials"
    assert sent.headers["authorization"] == f"Bearer {TOKEN.reveal()}"
    assert sent.headers["x-request-id"] == "req-42"
    assert sent.content == b'{"a":1}'


def test_no_answer__unreachable_and_not_parked() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client = _client(httpx.MockTransport(refuse))
    with pytest.raises(Unreachable) as caught:
        asyncio.run(client.request("GET", "/internal/gateways"))
    assert caught.value.detail == "billing /internal/gateways: ConnectError"
    assert not caught.value.parked


def test_breaker_open__not_asked_parked_with_when_to_try() -> None:
    calls = 0

    def fail(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(502)

    client = _client(httpx.MockTransport(fail), Breakers())

    async def until_parked() -> Unreachable:
        for _ in range(100):
            try:
                await client.request("GET", "/internal/gateways")
            except Unreachable as error:
                return error
        raise AssertionError("the breaker never opened")

    parked = asyncio.run(until_parked())
    asked = calls
    assert parked.parked and parked.retry_after > 0
    assert "not asked" in parked.detail
    with pytest.raises(Unreachable):
        asyncio.run(client.request("GET", "/internal/gateways"))
    assert calls == asked
