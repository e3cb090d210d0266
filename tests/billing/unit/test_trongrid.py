"""The TronGrid client against TronGrid's answers, through httpx.MockTransport."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
import pytest

from billing.trongrid import Lookup, TronGrid, TronGridUnavailable
from shared.settings import Secret

HASH = "cd" * 32
FOUND = {"txID": HASH, "ret": [{"contractRet": "SUCCESS"}]}
INFO = {"id": HASH, "blockTimeStamp": 1_796_000_000_000}


def lookup(
    handler: Callable[[httpx.Request], httpx.Response], key: Secret | None = None
) -> tuple[Lookup, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    async def run() -> Lookup:
        async with httpx.AsyncClient(transport=httpx.MockTransport(record)) as client:
            return await TronGrid(client, "https://api.trongrid.io/", key).lookup(HASH)

    return asyncio.run(run()), seen


def test_lookup__three_bodies_visible_and_the_key_in_its_header() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/wallet/gettransactionbyid":
            return httpx.Response(200, json=FOUND)
        return httpx.Response(200, json=INFO)

    found, seen = lookup(answer, Secret("k" * 36))
    assert found == Lookup(FOUND, INFO, INFO) and found.found
    assert [r.url.path for r in seen] == [
        "/wallet/gettransactionbyid",
        "/wallet/gettransactioninfobyid",
        "/walletsolidity/gettransactioninfobyid",
    ]
    assert all(json.loads(r.content) == {"value": HASH, "visible": True} for r in seen)
    assert all(r.headers["tron-pro-api-key"] == "k" * 36 for r in seen)


def test_lookup__unknown_hash_asks_once_and_no_key_no_header() -> None:
    found, seen = lookup(lambda request: httpx.Response(200, json={}))
    assert found == Lookup({}, {}, {}) and not found.found
    assert len(seen) == 1 and "tron-pro-api-key" not in seen[0].headers


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(429, json={"Error": "too many requests"}),
        httpx.Response(403, json={"success": False, "error": "Exceed the user daily usage"}),
        httpx.Response(502, text="<html>502 Bad Gateway</html>"),
        httpx.Response(200, text="<html>maintenance</html>"),
        httpx.Response(
            200,
            json={"Error": "The key exceeds the frequency limit(30), suspended for 30s"},
        ),
        httpx.Response(200, json=["not", "an", "object"]),
    ],
)
def test_lookup__what_is_not_an_answer_means_try_later(response: httpx.Response) -> None:
    with pytest.raises(TronGridUnavailable):
        lookup(lambda request: response)


def test_lookup__a_timeout_means_try_later() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(TronGridUnavailable, match="ReadTimeout"):
        lookup(slow)
