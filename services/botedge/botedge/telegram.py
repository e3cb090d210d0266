"""The Bot API client: one call, Telegram's envelope unwrapped, errors classified.

Errors are matched on `error_code` first and on lower-cased parts of `description` second,
never on whole strings. A body that is not JSON (nginx's 502/504 pages) is a server error.
The token lives only in the URL path; no URL is ever logged by this module.
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx

# Connections to Telegram stay open between bursts: a new one costs a TLS handshake, which is
# most of a first reply after a quiet minute. httpx would drop them after 5 s idle.
KEEPALIVE_SECONDS = 300.0


def http_client() -> httpx.AsyncClient:
    """A client for a process's occasional calls (registration, checks, billing)."""
    return httpx.AsyncClient(limits=httpx.Limits(keepalive_expiry=KEEPALIVE_SECONDS))


class BotClients:
    """One small keep-alive client per bot, for a worker's steady calls. httpcore's pool looks
    at every connection it holds on each request (each idle one against all the others), so a
    single pool shared by every bot costs more per call the more connections it keeps open.
    Three idle ones per bot: at 10 updates/s per bot, keeping eight put the pool's checks at
    24% of a worker's CPU; three put them at 10%, with a few more connections opened."""

    def __init__(self, connections: int = 16, idle: int = 3) -> None:
        self.limits = httpx.Limits(
            max_connections=connections,
            max_keepalive_connections=idle,
            keepalive_expiry=KEEPALIVE_SECONDS,
        )
        self.clients: dict[str, httpx.AsyncClient] = {}

    def __call__(self, token: str) -> httpx.AsyncClient:
        bot = token.partition(":")[0]
        client = self.clients.get(bot)
        if client is None:
            client = self.clients[bot] = httpx.AsyncClient(limits=self.limits)
        return client

    async def __aenter__(self) -> BotClients:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for client in self.clients.values():
            await client.aclose()
        self.clients.clear()


class TelegramError(Exception):
    """Telegram answered `ok: false`, or could not be reached."""

    def __init__(
        self,
        code: int,
        description: str,
        *,
        retry_after: float | None = None,
        parameters: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{code}: {description}")
        self.code = code
        self.description = description
        self.retry_after = retry_after
        self.parameters = parameters or {}


class Unauthorized(TelegramError):
    """401 (or 404 for a malformed token): the token is not valid; stop using it."""


class Forbidden(TelegramError):
    """403: blocked by the user, kicked from the chat, ...; retrying cannot help."""


class BadRequest(TelegramError):
    """400: this call is wrong; retrying it unchanged cannot help."""

    @property
    def not_modified(self) -> bool:
        return "message is not modified" in self.description.lower()


class TooManyRequests(TelegramError):
    """429: wait `retry_after` seconds before calling again with this token."""


class Conflict(TelegramError):
    """409: getUpdates while a webhook is set, or another poller is running."""


class ServerError(TelegramError):
    """5xx, a non-JSON answer, a timeout or a transport failure: retry with backoff."""


_BY_CODE: dict[int, type[TelegramError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: Unauthorized,
    409: Conflict,
    429: TooManyRequests,
}


def user_agent() -> str:
    return f"gatehouse-botedge/{os.getpid()}"


class BotApi:
    """Calls `{base}/bot<token>/<method>` over one shared keep-alive client, or a client per
    bot (`BotClients`)."""

    def __init__(self, client: httpx.AsyncClient | BotClients, base_url: str) -> None:
        self.clients = client
        self.base_url = base_url.rstrip("/")

    def client(self, token: str) -> httpx.AsyncClient:
        clients = self.clients
        return clients(token) if isinstance(clients, BotClients) else clients

    async def call(
        self,
        token: str,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        files: dict[str, tuple[str, bytes, str]] | None = None,
        timeout: float = 15.0,
    ) -> Any:
        """JSON, or multipart/form-data when there are `files` to upload."""
        url = f"{self.base_url}/bot{token}/{method}"
        headers = {"User-Agent": user_agent()}
        try:
            if files:
                response = await self.client(token).post(
                    url,
                    data=form_fields(params or {}),
                    files=files,
                    timeout=timeout,
                    headers=headers,
                )
            else:
                response = await self.client(token).post(
                    url, json=params or {}, timeout=timeout, headers=headers
                )
        except httpx.TimeoutException:
            raise ServerError(0, f"{method}: timed out") from None
        except httpx.TransportError as error:
            raise ServerError(0, f"{method}: {type(error).__name__}") from None
        return unwrap(response)


def form_fields(params: dict[str, Any]) -> dict[str, str]:
    """Parameters as multipart fields: strings as they are, anything else (numbers, booleans,
    `reply_markup`) JSON-encoded, as the Bot API reads them."""
    return {
        key: value if isinstance(value, str) else json.dumps(value)
        for key, value in params.items()
        if value is not None
    }


def unwrap(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        raise ServerError(
            response.status_code, f"non-JSON answer ({response.status_code})"
        ) from None
    if not isinstance(body, dict):
        raise ServerError(response.status_code, "answer is not a JSON object")
    if body.get("ok") is True:
        return body.get("result")
    code = body.get("error_code")
    if not isinstance(code, int):
        code = response.status_code
    description = str(body.get("description") or "")
    parameters = body.get("parameters") if isinstance(body.get("parameters"), dict) else {}
    retry_after: float | None = None
    if code == 429:
        value = parameters.get("retry_after") if parameters else None
        if value is None:
            value = response.headers.get("retry-after")
        try:
            retry_after = max(0.0, float(value)) if value is not None else 1.0
        except ValueError:
            retry_after = 1.0
    kind = _BY_CODE.get(code, ServerError if code >= 500 else BadRequest)
    return_error = kind(code, description, retry_after=retry_after, parameters=parameters)
    raise return_error
