"""Asking billing and botedge: their internal endpoints, their answers handed back unchanged.

Money and Telegram are theirs (DESIGN: who owns what); the panel forwards the owner's request
with `SERVICE_TOKEN` and the request id, and relays the status and body. When the other service
cannot be asked, or fails without a problem body, the answer is 503 `<service>-unavailable`;
while its breaker is open it is not asked, and the 503 says when to try (`Retry-After`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable
from typing import Any, TypeVar, cast

import httpx
from starlette.responses import Response

from shared.breaker import Breakers
from shared.errors import PROBLEM_JSON, Problem
from shared.internal import InternalClient, Unreachable
from shared.settings import Secret
from shared.tls import verified


class Internal:
    """One service's internal endpoints, over one client opened for the process's life
    (`async with`): building an httpx client loads the CA bundle, 21 ms of CPU on this
    machine, which a client per call paid on every id of a 1,000-id import."""

    def __init__(
        self, service: str, base_url: str, service_token: Secret, breakers: Breakers | None = None
    ) -> None:
        self.service = service
        self.calls = InternalClient(service, base_url, service_token, breakers)

    async def __aenter__(self) -> Internal:
        self.calls.client = httpx.AsyncClient(timeout=30, verify=verified())
        return self

    async def __aexit__(self, *exc: object) -> None:
        client, self.calls.client = self.calls.client, None
        if client is not None:
            await client.aclose()

    async def ask(self, method: str, path: str, body: Any = None) -> httpx.Response:
        try:
            answer = await self.calls.request(method, path, json=body)
        except Unreachable as error:
            unavailable = self._unavailable(error.detail)
            if error.parked:
                unavailable.headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
            raise unavailable from None
        if answer.status_code >= 500 and answer.headers.get("content-type") != PROBLEM_JSON:
            raise self._unavailable(f"{self.service} {path}: answered {answer.status_code}")
        return answer

    def _unavailable(self, detail: str) -> Problem:
        return Problem(503, f"{self.service}-unavailable", detail)


def relayed(answer: httpx.Response) -> Response:
    """The other service's answer, status and body, as it gave them."""
    return Response(
        answer.content,
        status_code=answer.status_code,
        media_type=answer.headers.get("content-type", "application/json"),
    )


T = TypeVar("T")
# Calls to another service in flight for one request that asks about many people (each
# person's membership has its own lock there).
AT_ONCE = 8


async def each(calls: list[Awaitable[T]]) -> list[T]:
    """The calls' answers in their order, at most `AT_ONCE` of them running at a time; a
    failure (the service unreachable: 503) is raised once every call has ended, so none is
    left running after the answer."""
    gate = asyncio.Semaphore(AT_ONCE)

    async def one(call: Awaitable[T]) -> T:
        async with gate:
            return await call

    ended = await asyncio.gather(*(one(call) for call in calls), return_exceptions=True)
    for outcome in ended:
        if isinstance(outcome, BaseException):
            raise outcome
    return cast(list[T], ended)
