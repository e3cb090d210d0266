"""Asking another of our services at its internal endpoints: its base URL, `SERVICE_TOKEN` as
the bearer, the caller's request id, and the other service's breaker. Each caller turns
`Unreachable` into its own terms (a 503 for the panel, a retried update for the bot edge, a
skipped check for billing's reconciliation) and reads the answers it expects.

The HTTP client is the caller's (`client`), opened for its process's life: building an httpx
client loads the CA bundle, about 21 ms of CPU, which a client per call would pay each time. A
test passes one over `httpx.MockTransport`.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any
from urllib.parse import urlsplit

import httpx

from shared.breaker import BreakerOpen, Breakers, guarded
from shared.logging import request_id
from shared.settings import Secret


class Unreachable(Exception):
    """The service could not be asked, or did not answer in time. `parked`: it was not asked
    at all, its breaker being open, and `retry_after` says when it may be."""

    def __init__(self, detail: str, retry_after: float = 0.0, *, parked: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.retry_after = retry_after
        self.parked = parked


class InternalClient:
    def __init__(
        self,
        service: str,
        base_url: str,
        token: Secret,
        breakers: Breakers | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.service = service
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.client = client
        self.breaker = (breakers or Breakers()).get(service, urlsplit(self.base_url).netloc)

    async def request(
        self, method: str, path: str, *, timeout: float | None = None, **kwargs: Any
    ) -> httpx.Response:
        """The service's answer, whatever its status; `Unreachable` when there is none."""
        client = self.client
        if client is None:
            raise RuntimeError(f"the {self.service} client is used before it is opened")
        headers = {"Authorization": f"Bearer {self.token.reveal()}"}
        rid = request_id.get()
        if rid:
            headers["X-Request-Id"] = rid
        options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}

        def send() -> Awaitable[httpx.Response]:
            url = f"{self.base_url}{path}"
            return client.request(method, url, headers=headers, **options, **kwargs)

        try:
            return await guarded(self.breaker, send)
        except BreakerOpen as error:
            raise Unreachable(
                f"{self.service} {path}: is failing; not asked ({error})",
                error.retry_after,
                parked=True,
            ) from None
        except httpx.HTTPError as error:
            raise Unreachable(f"{self.service} {path}: {type(error).__name__}") from None
