"""Asking billing and botedge: their internal endpoints, their answers handed back unchanged.

Money and Telegram are theirs (DESIGN: who owns what); the panel forwards the owner's request
with `SERVICE_TOKEN` and the request id, and relays the status and body. When the other service
cannot be asked, or fails without a problem body, the answer is 503 `<service>-unavailable`;
while its breaker is open it is not asked, and the 503 says when to try (`Retry-After`).
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlsplit

import httpx
from starlette.responses import Response

from shared.breaker import BreakerOpen, Breakers, guarded
from shared.errors import PROBLEM_JSON, Problem
from shared.logging import request_id
from shared.settings import Secret


class Internal:
    """One service's internal endpoints, over one client opened for the process's life
    (`async with`): building an httpx client loads the CA bundle, 21 ms of CPU on this
    machine, which a client per call paid on every id of a 1,000-id import."""

    def __init__(
        self, service: str, base_url: str, service_token: Secret, breakers: Breakers | None = None
    ) -> None:
        self.service = service
        self.base_url = base_url
        self.service_token = service_token
        self.client: httpx.AsyncClient | None = None
        self.breaker = (breakers or Breakers()).get(service, urlsplit(base_url).netloc)

    async def __aenter__(self) -> Internal:
        self.client = httpx.AsyncClient(timeout=30)
        return self

    async def __aexit__(self, *exc: object) -> None:
        client, self.client = self.client, None
        if client is not None:
            await client.aclose()

    async def ask(self, method: str, path: str, body: Any = None) -> httpx.Response:
        if self.client is None:
            raise RuntimeError(f"the {self.service} client is used outside the app's lifespan")
        headers = {"Authorization": f"Bearer {self.service_token.reveal()}"}
        rid = request_id.get()
        if rid:
            headers["X-Request-Id"] = rid
        client = self.client
        try:
            answer = await guarded(
                self.breaker,
                lambda: client.request(
                    method, f"{self.base_url}{path}", json=body, headers=headers
                ),
            )
        except BreakerOpen as error:
            unavailable = self._unavailable(f"is failing; not asked ({error})")
            unavailable.headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
            raise unavailable from None
        except httpx.HTTPError as error:
            raise self._unavailable(f"could not be asked: {type(error).__name__}") from None
        if answer.status_code >= 500 and answer.headers.get("content-type") != PROBLEM_JSON:
            raise self._unavailable(f"answered {answer.status_code}")
        return answer

    def _unavailable(self, what: str) -> Problem:
        return Problem(503, f"{self.service}-unavailable", f"{self.service} {what}")


def relayed(answer: httpx.Response) -> Response:
    """The other service's answer, status and body, as it gave them."""
    return Response(
        answer.content,
        status_code=answer.status_code,
        media_type=answer.headers.get("content-type", "application/json"),
    )
