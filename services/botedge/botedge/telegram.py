"""The Bot API client: one call, Telegram's envelope unwrapped, errors classified.

Errors are matched on `error_code` first and on lower-cased parts of `description` second,
never on whole strings. A body that is not JSON (nginx's 502/504 pages) is a server error.
The token lives only in the URL path; no URL is ever logged by this module.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from botedge.errors import RetryLater
from botedge.uploads import File
from shared.breaker import Breaker, Breakers

log = logging.getLogger("botedge.telegram")

# Connections to Telegram stay open between bursts: a new one costs a TLS handshake, which is
# most of a first reply after a quiet minute. The clients' defaults would drop them after
# seconds idle (aiohttp 15 s, httpx 5 s for the billing client in pay.py).
KEEPALIVE_SECONDS = 300.0


class BotClients:
    """The Bot API transport: one aiohttp session per bot, so one bot's slow calls never hold
    another's connections. aiohttp, not httpx, for the calls a worker makes all day (three per
    gated `/start`): on this machine, over loopback, httpx took 900 µs of CPU per call and
    aiohttp 88 µs."""

    def __init__(self, connections: int = 16) -> None:
        self.connections = connections
        self.sessions: dict[str, aiohttp.ClientSession] = {}

    def session(self, token: str) -> aiohttp.ClientSession:
        bot = token.partition(":")[0]
        session = self.sessions.get(bot)
        if session is None:
            connector = aiohttp.TCPConnector(
                limit=self.connections, keepalive_timeout=KEEPALIVE_SECONDS
            )
            session = self.sessions[bot] = aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar()
            )
        return session

    async def post(
        self,
        token: str,
        url: str,
        params: dict[str, Any],
        files: dict[str, File] | None,
        timeout: float,
    ) -> Answer:
        headers = {"User-Agent": user_agent()}
        data: aiohttp.FormData | bytes
        if files:
            data = aiohttp.FormData()
            for key, value in form_fields(params).items():
                data.add_field(key, value)
            for key, (filename, content, content_type) in files.items():
                data.add_field(key, content, filename=filename, content_type=content_type)
        else:
            data = json.dumps(params).encode()
            headers["Content-Type"] = "application/json"
        async with self.session(token).post(
            url, data=data, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)
        ) as response:
            return Answer(
                response.status, await response.read(), response.headers.get("retry-after")
            )

    async def __aenter__(self) -> BotClients:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for session in self.sessions.values():
            await session.close()
        self.sessions.clear()


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    retry_after: str | None = None


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


class CircuitOpen(ServerError):
    """The breaker for this bot, or for Telegram's host, is open: the call was not made.
    `retry_after` is when one may be; work waiting on it is parked, not counted as a try."""


def parked_delay(error: BaseException) -> float | None:
    """When `error` says the work was not tried at all because a breaker is open (a
    `CircuitOpen`, or a handler's `RetryLater` raised for one), the seconds it waits without
    spending a try; otherwise None."""
    if isinstance(error, CircuitOpen) or getattr(error, "parked", False) is True:
        return float(getattr(error, "retry_after", 0.0) or 0.5)
    return None


def counts_against_telegram(error: TelegramError) -> bool:
    """Whether an error says Telegram is failing, not that our call was wrong: a 5xx, an
    answer that is not JSON, a timeout, a lost connection. A 400 of our making, a 401/403 (a
    token, a block), a 409 or a 429 (Telegram answering, and asking for quiet) never do."""
    return isinstance(error, ServerError) and not isinstance(error, CircuitOpen)


def is_network_failure(error: TelegramError) -> bool:
    """No HTTP answer at all (a timeout, a refused or dropped connection): the host's
    breaker's business, not one bot's."""
    return counts_against_telegram(error) and error.code == 0


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
    """Calls `{base}/bot<token>/<method>` through `BotClients`, behind a breaker per bot (its
    5xx and unreadable answers) and one for Telegram's host (calls that get no answer)."""

    def __init__(
        self, clients: BotClients, base_url: str, breakers: Breakers | None = None
    ) -> None:
        self.clients = clients
        self.base_url = base_url.rstrip("/")
        self.breakers = breakers or Breakers()
        self.host = self.breakers.get("telegram", urlsplit(self.base_url).netloc or "api")

    def breaker(self, token: str) -> Breaker:
        # The token's public half, the bot's Telegram id, names it; never the secret half.
        return self.breakers.get("telegram", f"bot {token.partition(':')[0]}")

    def closed_for(self, token: str) -> float:
        """0 when a call of this bot's may go now; otherwise the seconds until one may. A look:
        it takes no probe."""
        return max(self.breaker(token).wait(take_probe=False), self.host.wait(take_probe=False))

    async def call(
        self,
        token: str,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        files: dict[str, File] | None = None,
        timeout: float = 15.0,
    ) -> Any:
        """JSON, or multipart/form-data when there are `files` to upload."""
        bot = self.breaker(token)
        for breaker in (bot, self.host):
            wait = breaker.wait()
            if wait:
                raise CircuitOpen(
                    0,
                    f"{method}: Telegram {breaker.target} is failing; not called",
                    retry_after=wait,
                )
        url = f"{self.base_url}/bot{token}/{method}"
        try:
            try:
                answer = await self.clients.post(token, url, params or {}, files, timeout)
            except TimeoutError:
                raise ServerError(0, f"{method}: timed out") from None
            except aiohttp.ClientError as error:
                raise ServerError(0, f"{method}: {type(error).__name__}") from None
            log.debug("Bot API %s: %d", method, answer.status)
            result = unwrap(answer)
        except TelegramError as error:
            if is_network_failure(error):
                self.host.failed()
            elif counts_against_telegram(error):
                self.host.succeeded()
                bot.failed()
            else:
                self.host.succeeded()
                bot.succeeded()
            raise
        self.host.succeeded()
        bot.succeeded()
        return result


def form_fields(params: dict[str, Any]) -> dict[str, str]:
    """Parameters as multipart fields: strings as they are, anything else (numbers, booleans,
    `reply_markup`) JSON-encoded, as the Bot API reads them."""
    return {
        key: value if isinstance(value, str) else json.dumps(value)
        for key, value in params.items()
        if value is not None
    }


def unwrap(answer: Answer) -> Any:
    try:
        body = json.loads(answer.body)
    except ValueError:
        raise ServerError(answer.status, f"non-JSON answer ({answer.status})") from None
    if not isinstance(body, dict):
        raise ServerError(answer.status, "answer is not a JSON object")
    if body.get("ok") is True:
        return body.get("result")
    code = body.get("error_code")
    if not isinstance(code, int):
        code = answer.status
    description = str(body.get("description") or "")
    parameters = body.get("parameters") if isinstance(body.get("parameters"), dict) else {}
    retry_after: float | None = None
    if code == 429:
        value = parameters.get("retry_after") if parameters else None
        if value is None:
            value = answer.retry_after
        try:
            retry_after = max(0.0, float(value)) if value is not None else 1.0
        except ValueError:
            retry_after = 1.0
    kind = _BY_CODE.get(code, ServerError if code >= 500 else BadRequest)
    return_error = kind(code, description, retry_after=retry_after, parameters=parameters)
    raise return_error


_UNREACHABLE = ("user is deactivated", "chat not found", "can't initiate conversation")


def unreachable(description: str) -> bool:
    return any(words in description.lower() for words in _UNREACHABLE)


def retry_later(what: str, error: TelegramError) -> RetryLater:
    """A Bot API call that failed as Telegram failing (5xx, 429, its breaker open): the update
    waits; parked without spending a try while the breaker is open."""
    parked = isinstance(error, CircuitOpen)
    return RetryLater(f"{what}: {error}", error.retry_after or 0.0, parked=parked)
