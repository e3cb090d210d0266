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
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
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
from simulators.telegram.botapi import METHODS, Params, WithDescription, error_body
from simulators.telegram.state import ApiError, Bot, Call, Faults, Upload, World
from simulators.telegram.webhooks import Deliveries

log = logging.getLogger("simtelegram")

BODY_LIMIT = 50 * 1024 * 1024


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


async def _injected(
    world: World, bot: Bot, name: str, client: tuple[str, int] | None
) -> Answer | None:
    """The faults this call meets before it is answered: delays, a 502 for a bot that is
    down, and at random a 429, a 502, a 504 after a long wait or a 200 that is not JSON (never
    for getUpdates)."""
    faults = world.faults
    if bot.id in faults.down_bots:
        return Answer.html(502, BAD_GATEWAY)
    if faults.connect_delay_ms and world.new_connection(client):
        await asyncio.sleep(faults.connect_delay_ms / 1000)
    if faults.delay_ms:
        await asyncio.sleep(faults.delay_ms / 1000)
    if name == "getupdates":
        return None
    roll = world.random.random()
    if roll < faults.rate_429:
        raise ApiError(429, "", retry_after=faults.retry_after)
    if roll < faults.rate_429 + faults.rate_5xx:
        return Answer.html(502, BAD_GATEWAY)
    if roll < faults.rate_429 + faults.rate_5xx + faults.rate_timeout:
        await asyncio.sleep(faults.timeout_seconds)
        return Answer.html(504, "<html><body>504 Gateway Time-out</body></html>")
    if roll < faults.rate_429 + faults.rate_5xx + faults.rate_timeout + faults.rate_non_json:
        return Answer.html(200, "<html><body>Please wait, checking your browser</body></html>")
    return None


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
    token: str,
    name: str,
    client: tuple[str, int] | None,
    agent: str,
    read: Callable[[], Awaitable[Params]],
) -> Answer:
    """One Bot API call; `read()` gives its parameters (it may raise ApiError)."""
    started = time.time()
    status = 200
    bot: Bot | None = None
    params: Params = {}
    world.in_flight[name] += 1
    try:
        bot = world.bot(token)
        params = await read()
        method = METHODS.get(name) or stars.METHODS.get(name)
        if method is None:
            raise ApiError(404, "Not Found: method not found")
        refused = await _injected(world, bot, name, client)
        if refused is not None:
            status = refused.status
            return refused
        result = await method(world, bot, params)
        if name == "setwebhook":
            world.on_update(bot)
        if isinstance(result, WithDescription):
            return Answer.json(
                200, {"ok": True, "result": result.result, "description": result.description}
            )
        return Answer.json(200, {"ok": True, "result": result})
    except ApiError as error:
        status = error.code
        return Answer.error(error)
    except CALLERS_MISTAKES as error:
        # A parameter of a shape the method did not expect: the caller's mistake.
        status = 400
        return Answer.error(ApiError(400, f"Bad Request: {type(error).__name__}: {error}"[:300]))
    finally:
        world.in_flight[name] -= 1
        world.calls.append(_call(bot.id if bot else 0, name, started, status, agent, params))


async def bot_method(request: Request) -> Response:
    """A Bot API call the connection did not answer itself: an upload (multipart form), or a
    request pipelined behind another on its connection."""
    world: World = request.app.state.world
    content_type = request.headers.get("content-type", "")

    async def read() -> Params:
        if content_type.startswith("multipart/"):
            return await _upload_params(request)
        try:
            # Its size is BodyLimitMiddleware's to check, as for every route.
            body = await request.body()
        except ClientDisconnect:
            raise ApiError(400, "Bad Request: request was not read whole") from None
        return _body_params(request.scope["query_string"].decode("latin-1"), content_type, body)

    answer = await _answer(
        world,
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

    async def read(self) -> Params:
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


def bot_api_protocol(world: World) -> type[HttpToolsProtocol]:
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
            if call.started:
                return
            call.started = True
            task = self.loop.create_task(self._run(call))
            task.add_done_callback(self.tasks.discard)
            self.tasks.add(task)

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

        async def _run(self, call: _BotCall) -> None:
            try:
                if call.token is None:
                    answer = call.messages(world)
                else:
                    answer = await _answer(
                        world, call.token, call.name, self.client, call.agent, call.read
                    )
            except Exception:
                log.exception("unhandled error in %s", call.name)
                answer = Answer.json(
                    500, {"ok": False, "error_code": 500, "description": "Internal Server Error"}
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
    app.state.http_protocol = bot_api_protocol(world)
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
