"""The simulated Bot API: `/bot<token>/<method>` in Telegram's shapes, plus `/_sim/...` control.

Real error bodies (`{"ok": false, "error_code", "description", "parameters"}`), real limits
(about 1 message a second per private chat with short bursts, 20 a minute per group, 30 a
second per bot) answered with 429 and `retry_after`, and injected faults from `Faults`. The
methods are in `botapi`, the control endpoints in `control`, webhook delivery in `webhooks`
and what the server remembers in `state`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import msgspec
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from shared.errors import PROBLEM_JSON, Problem, problem_response, too_large
from shared.web import CALLERS_MISTAKES, bad_values, create_plain_app
from simulators.fields import json_fields
from simulators.pages import page_routes
from simulators.statefile import StateFile, saving
from simulators.telegram import control, stars
from simulators.telegram.botapi import (
    LONG_POLL,
    METHODS,
    Params,
    WithDescription,
    error_body,
    get_updates,
)
from simulators.telegram.state import ApiError, Bot, Call, Faults, Upload, World
from simulators.telegram.webhooks import Deliveries

log = logging.getLogger("simtelegram")

BODY_LIMIT = 50 * 1024 * 1024
# Every method but getUpdates: each answers at once.
_METHODS = {**METHODS, **stars.METHODS}


@dataclass(frozen=True)
class Answer:
    """A Bot API call's answer, before it is a Starlette response or raw ASGI messages."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def json(cls, status: int, body: Any, headers: tuple[tuple[str, str], ...] = ()) -> Answer:
        # Compact UTF-8, as Starlette's JSONResponse renders it, in a tenth of the time.
        return cls(status, msgspec.json.encode(body), headers=headers)

    @classmethod
    def problem(cls, problem: Problem) -> Answer:
        response = problem_response(problem)
        return cls(
            response.status_code,
            bytes(response.body),
            PROBLEM_JSON,
            tuple(problem.headers.items()),
        )

    @classmethod
    def html(cls, status: int, page: str) -> Answer:
        return cls(status, page.encode(), "text/html; charset=utf-8")

    @classmethod
    def error(cls, error: ApiError) -> Answer:
        body, headers = error_body(error)
        return cls.json(error.code, body, tuple(headers.items()))

    def response(self) -> Response:
        return Response(self.body, self.status, dict(self.headers), media_type=self.content_type)


BAD_GATEWAY = "<html><body><h1>502 Bad Gateway</h1></body></html>"


def _field(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


async def _upload_params(request: Request) -> Params:
    """An upload: files as parts, every other parameter a string (JSON for objects)."""
    params: Params = dict(request.query_params)
    async with request.form(max_part_size=10 * 1024 * 1024) as form:
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                params[key] = Upload(
                    value.filename or "", value.content_type or "", await value.read()
                )
            else:
                params[key] = _field(value)
    return params


def _body_params(query: str, content_type: str, body: bytes) -> Params:
    params: Params = dict(parse_qsl(query, keep_blank_values=True))
    if not body:
        return params
    if "json" in content_type:
        try:
            loaded = msgspec.json.decode(body)
        except (msgspec.DecodeError, RecursionError):
            raise ApiError(400, "Bad Request: can't parse JSON object") from None
        if isinstance(loaded, dict):
            params.update(loaded)
    else:
        for key, value in parse_qsl(body.decode(errors="replace")):
            params[key] = _field(value)
    return params


class _Ticks:
    """Answers due within the same few milliseconds go out from one timer, so that the loop
    wakes once for them (at the reference load a timer an answer woke the simulator 600 times
    a second). Each waits until the tick after its time: at least its delay, at most a tick
    more."""

    STEP = 0.005

    def __init__(self) -> None:
        self.due: dict[int, list[Callable[[], None]]] = {}

    def call_later(self, seconds: float, callback: Callable[[], None]) -> None:
        loop = asyncio.get_running_loop()
        tick = math.ceil((loop.time() + seconds) / self.STEP)
        waiting = self.due.get(tick)
        if waiting is None:
            waiting = self.due[tick] = []
            loop.call_at(tick * self.STEP, self._fire, tick)
        waiting.append(callback)

    async def sleep(self, seconds: float) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not waiter.done():  # cancelled
                waiter.set_result(None)

        self.call_later(seconds, wake)
        await waiter

    def _fire(self, tick: int) -> None:
        for callback in self.due.pop(tick, ()):
            try:
                callback()
            except Exception:
                # Not to keep the others in this tick from their answers.
                log.exception("answering a Bot API call failed")


def _faults(
    world: World, bot: Bot, name: str, client: tuple[str, int] | None
) -> tuple[float, Answer | None]:
    """The faults this call meets: how long it waits before it is answered, and what it is
    answered with in place of the method's answer: a 502 at once for a bot that is down, and at
    random a 429, a 502, a 504 after a long wait or a 200 that is not JSON (never for
    getUpdates)."""
    faults = world.faults
    if bot.id in faults.down_bots:
        return 0.0, Answer.html(502, BAD_GATEWAY)
    wait = faults.delay_ms / 1000
    if faults.connect_delay_ms and world.new_connection(client):
        wait += faults.connect_delay_ms / 1000
    if name == LONG_POLL:
        return wait, None
    roll = world.random.random()
    if roll < faults.rate_429:
        return wait, Answer.error(ApiError(429, "", retry_after=faults.retry_after))
    if roll < faults.rate_429 + faults.rate_5xx:
        return wait, Answer.html(502, BAD_GATEWAY)
    if roll < faults.rate_429 + faults.rate_5xx + faults.rate_timeout:
        return wait + faults.timeout_seconds, Answer.html(
            504, "<html><body>504 Gateway Time-out</body></html>"
        )
    if roll < faults.rate_429 + faults.rate_5xx + faults.rate_timeout + faults.rate_non_json:
        return wait, Answer.html(
            200, "<html><body>Please wait, checking your browser</body></html>"
        )
    return wait, None


class _Exchange:
    """One Bot API call: `begin` when it has arrived, `finish` once its wait is over (after
    `await long_poll()` for getUpdates); recorded in `world.calls` when answered."""

    __slots__ = (
        "agent",
        "answer",
        "bot",
        "claimed_id",
        "name",
        "params",
        "started",
        "wait",
        "world",
    )

    def __init__(self, world: World, name: str, agent: str) -> None:
        self.world = world
        self.name = name
        self.agent = agent
        self.started = time.time()
        self.bot: Bot | None = None
        # The bot a refused token names (its digits before the colon), so that its refused
        # calls are counted as that bot's.
        self.claimed_id = 0
        self.params: Params = {}
        self.wait = 0.0
        # Set when the call is answered without its method (a fault, an error), and by a
        # long poll.
        self.answer: Answer | None = None
        world.in_flight[name] += 1

    def begin(self, token: str, read: Callable[[], Params], client: tuple[str, int] | None) -> None:
        prefix = token.partition(":")[0]
        self.claimed_id = int(prefix) if prefix.isdigit() and len(prefix) < 16 else 0
        try:
            self.bot = self.world.bot(token)
            self.params = read()
            if self.name not in _METHODS and self.name != LONG_POLL:
                raise ApiError(404, "Not Found: method not found")
            self.wait, self.answer = _faults(self.world, self.bot, self.name, client)
        except Exception as error:
            self.answer = self._failed(error)

    async def long_poll(self) -> None:
        if self.answer is None and self.name == LONG_POLL and self.bot is not None:
            try:
                self.answer = self._answered(await get_updates(self.world, self.bot, self.params))
            except Exception as error:
                self.answer = self._failed(error)

    def finish(self) -> Answer:
        answer = self.answer if self.answer is not None else self._run()
        self.world.in_flight[self.name] -= 1
        bot_id = self.bot.id if self.bot else self.claimed_id
        self.world.calls.append(
            _call(bot_id, self.name, self.started, answer.status, self.agent, self.params)
        )
        return answer

    def _run(self) -> Answer:
        method = _METHODS.get(self.name)
        try:
            if method is None or self.bot is None:
                raise RuntimeError(f"{self.name} finished without being begun or awaited")
            return self._answered(method(self.world, self.bot, self.params))
        except Exception as error:
            return self._failed(error)

    def _answered(self, result: Any) -> Answer:
        if self.name == "setwebhook" and self.bot is not None:
            self.world.on_update(self.bot)
        if isinstance(result, WithDescription):
            return Answer.json(
                200, {"ok": True, "result": result.result, "description": result.description}
            )
        return Answer.json(200, {"ok": True, "result": result})

    def _failed(self, error: Exception) -> Answer:
        if isinstance(error, ApiError):
            return Answer.error(error)
        if isinstance(error, CALLERS_MISTAKES):
            # A parameter of a shape the method did not expect: the caller's mistake.
            return Answer.error(
                ApiError(400, f"Bad Request: {type(error).__name__}: {error}"[:300])
            )
        log.error("unhandled error in %s", self.name, exc_info=error)
        return Answer.json(
            500, {"ok": False, "error_code": 500, "description": "Internal Server Error"}
        )


def _call(
    bot_id: int, name: str, started: float, status: int, user_agent: str, params: Params
) -> Call:
    chat = params.get("chat_id")
    text = params.get("text")
    return Call(
        bot_id=bot_id,
        method=name,
        started=started,
        at=time.time(),
        status=status,
        user_agent=user_agent,
        chat_id=int(chat)
        if isinstance(chat, int | str) and str(chat).lstrip("-").isdigit()
        else None,
        text=text if isinstance(text, str) else None,
    )


async def _answer(
    world: World,
    ticks: _Ticks,
    token: str,
    name: str,
    client: tuple[str, int] | None,
    agent: str,
    read: Callable[[], Params],
) -> Answer:
    """One Bot API call answered in a task: its wait slept, a long poll awaited."""
    exchange = _Exchange(world, name, agent)
    exchange.begin(token, read, client)
    if exchange.wait:
        await ticks.sleep(exchange.wait)
    await exchange.long_poll()
    return exchange.finish()


async def bot_method(request: Request) -> Response:
    """A Bot API call the connection did not answer itself: an upload (multipart form), or a
    request pipelined behind another on its connection."""
    world: World = request.app.state.world
    content_type = request.headers.get("content-type", "")
    params: Params = {}
    unread: ApiError | None = None
    try:
        if content_type.startswith("multipart/"):
            params = await _upload_params(request)
        else:
            # Its size is BodyLimitMiddleware's to check, as for every route.
            body = await request.body()
            params = _body_params(
                request.scope["query_string"].decode("latin-1"), content_type, body
            )
    except ClientDisconnect:
        unread = ApiError(400, "Bad Request: request was not read whole")
    except ApiError as error:
        unread = error

    def read() -> Params:
        if unread is not None:
            raise unread
        return params

    answer = await _answer(
        world,
        request.app.state.ticks,
        request.path_params["token"],
        request.path_params["method"].lower(),
        request.client and (request.client.host, request.client.port),
        request.headers.get("user-agent", ""),
        read,
    )
    return answer.response()


# The request target of a Bot API call: a path with nothing to unquote, and its query.
_BOT_TARGET = re.compile(rb"/bot([^/?%]+)/([^/?%]+)(?:\?(.*))?", re.DOTALL)


class _NoEvent:
    """What uvicorn's protocol sets when a body arrives; the call reads it when it is whole."""

    def set(self) -> None:
        pass


_NO_EVENT = _NoEvent()


# The load generator's batches of messages (`POST /_sim/messages`, 50 a second under the
# reference load): through Starlette's stack they cost the simulator as much as the messages.
_MESSAGES = b"/_sim/messages"


class _BotCall:
    """A Bot API call its connection answers itself, in place of uvicorn's request cycle: the
    fields the protocol reads and sets on a cycle are here. No token: a batch of messages."""

    __slots__ = (
        "agent",
        "body",
        "content_type",
        "disconnected",
        "keep_alive",
        "message_event",
        "more_body",
        "name",
        "query",
        "response_complete",
        "started",
        "token",
        "too_big",
    )

    def __init__(
        self,
        token: str | None,
        name: str,
        query: str,
        content_type: str,
        agent: str,
        keep_alive: bool,
    ) -> None:
        self.token = token
        self.name = name
        self.query = query
        self.content_type = content_type
        self.agent = agent
        self.keep_alive = keep_alive
        self.body = b""
        self.more_body = True
        self.started = False
        self.response_complete = False
        self.disconnected = False
        self.too_big = False
        self.message_event = _NO_EVENT

    def read(self) -> Params:
        if self.too_big:
            raise ApiError(413, "Request Entity Too Large")
        return _body_params(self.query, self.content_type, self.body)

    def messages(self, world: World) -> Answer:
        """A batch of messages (a JSON body), answered as control_messages answers it."""
        if self.too_big:
            return Answer.problem(too_large(BODY_LIMIT))
        try:
            return Answer.json(200, control.add_messages(world, json_fields(self.body)))
        except Problem as problem:
            return Answer.problem(problem)
        except ApiError as error:
            return Answer.error(error)
        except CALLERS_MISTAKES as error:
            return Answer.problem(bad_values(error))


def bot_api_protocol(world: World, ticks: _Ticks) -> type[HttpToolsProtocol]:
    """uvicorn's protocol, answering the Bot API's calls itself: the ASGI request cycle, the
    task and the app's middleware and router cost the simulator more CPU than the call, and in
    the load test it shares the cores with what is measured (three calls an update on the gate
    path). An upload, a method other than GET or POST, a request queued behind another on its
    connection and every other path go on to the app."""

    class BotApiProtocol(HttpToolsProtocol):
        def on_headers_complete(self) -> None:
            call = self._bot_call()
            if call is None:
                super().on_headers_complete()
            else:
                self.cycle = call  # type: ignore[assignment]

        def on_body(self, body: bytes) -> None:
            call = self.cycle
            super().on_body(body)
            if isinstance(call, _BotCall) and not call.response_complete:
                if len(call.body) > BODY_LIMIT:
                    # Answered now, and the connection closed on the rest.
                    call.body = b""
                    call.too_big = True
                    call.keep_alive = False
                    self._start(call)
                else:
                    # uvicorn pauses reading past 64 KiB until the app reads; here nothing will.
                    self.flow.resume_reading()

        def on_message_complete(self) -> None:
            call = self.cycle
            super().on_message_complete()
            if isinstance(call, _BotCall):
                self._start(call)

        def _start(self, call: _BotCall) -> None:
            """Answered at once or from a timer; a task only for a long poll, which waits."""
            if call.started:
                return
            call.started = True
            if call.token is None:
                try:
                    answer = call.messages(world)
                except Exception:
                    log.exception("unhandled error in a batch of messages")
                    answer = Answer.json(500, {"ok": False, "description": "Internal Server Error"})
                self._respond(call, answer)
                return
            if call.name == LONG_POLL:
                task = self.loop.create_task(self._long_poll(call, call.token))
                task.add_done_callback(self.tasks.discard)
                self.tasks.add(task)
                return
            exchange = _Exchange(world, call.name, call.agent)
            exchange.begin(call.token, call.read, self.client)
            if exchange.wait:
                ticks.call_later(exchange.wait, lambda: self._respond(call, exchange.finish()))
            else:
                self._respond(call, exchange.finish())

        def _bot_call(self) -> _BotCall | None:
            if self.cycle is not None and not self.cycle.response_complete:
                return None
            method = self.parser.get_method()
            if method not in (b"GET", b"POST") or self.parser.should_upgrade():
                return None
            found = _BOT_TARGET.fullmatch(self.url)
            batch = found is None and method == b"POST" and self.url == _MESSAGES
            if found is None and not batch:
                return None
            content_type = agent = ""
            for key, value in self.headers:
                if key == b"content-type":
                    content_type = value.decode("latin-1")
                elif key == b"user-agent":
                    agent = value.decode("latin-1")
            if content_type.startswith("multipart/") or self.expect_100_continue:
                return None
            keep_alive = self.parser.get_http_version() != "1.0" and self.parser.should_keep_alive()
            if found is None:
                # A batch of messages. Form fields (a walk in a shell) go on to the app.
                if not content_type.startswith("application/json"):
                    return None
                return _BotCall(None, "_sim/messages", "", content_type, agent, keep_alive)
            return _BotCall(
                found[1].decode("latin-1"),
                found[2].decode("latin-1").lower(),
                (found[3] or b"").decode("latin-1"),
                content_type,
                agent,
                keep_alive,
            )

        async def _long_poll(self, call: _BotCall, token: str) -> None:
            answer = await _answer(
                world, ticks, token, call.name, self.client, call.agent, call.read
            )
            self._respond(call, answer)

        def _respond(self, call: _BotCall, answer: Answer) -> None:
            """Head and body in one write, then what uvicorn does when a response is done."""
            if call.response_complete:
                return
            call.response_complete = True
            if call.disconnected:
                return
            head = [
                STATUS_LINE[answer.status],
                *(b"%s: %s\r\n" % pair for pair in self.server_state.default_headers),
                b"content-type: %s\r\ncontent-length: %d\r\n"
                % (answer.content_type.encode(), len(answer.body)),
                *(f"{k.lower()}: {v}\r\n".encode("latin-1") for k, v in answer.headers),
                b"\r\n" if call.keep_alive else b"connection: close\r\n\r\n",
                answer.body,
            ]
            self.transport.write(b"".join(head))
            if not call.keep_alive:
                self.transport.close()
            self.on_response_complete()

    return BotApiProtocol


def create_app(faults: Faults | None = None, seed: int | None = None) -> Starlette:
    world = World(faults or Faults.from_env(os.environ), seed)
    state = StateFile.restored(world.snapshot, world.version, world.restore)
    deliveries = Deliveries(world)
    world.on_update = deliveries.start
    app = create_plain_app(
        [
            Route("/bot{token}/{method}", bot_method, methods=["GET", "POST"]),
            *control.ROUTES,
            *stars.ROUTES,
            *page_routes(Path(__file__).parent / "static"),
        ],
        body_limit=BODY_LIMIT,
    )
    app.state.world = world
    # Served with this protocol by shared.lifecycle.serve (and the tests' server).
    app.state.ticks = _Ticks()
    app.state.http_protocol = bot_api_protocol(world, app.state.ticks)
    # A control call about a bot the simulator refuses is answered as the Bot API would.
    app.add_exception_handler(ApiError, lambda _, error: Answer.error(error).response())
    # Called by the server on a stop signal, before it waits for requests in flight.
    app.state.drain_hooks = [world.closing.set]

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with saving(state):
            # Updates a restored bot with a webhook has waiting go out as they would have.
            for bot in world.bots.values():
                if bot.webhook_url and bot.updates:
                    deliveries.start(bot)
            yield
            await deliveries.close()

    app.router.lifespan_context = lifespan
    return app
