"""One Bot API call, however it arrived: its parameters read, its faults and wait, its method
run, its answer in Telegram's envelope, and the record of it (`/_sim/calls`)."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import msgspec
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response

from shared.errors import PROBLEM_JSON, Problem, problem_response
from shared.web import CALLERS_MISTAKES
from simulators.telegram import profile, stars
from simulators.telegram.botapi import (
    LONG_POLL,
    METHODS,
    Params,
    WithDescription,
    error_body,
    get_updates,
)
from simulators.telegram.state import ApiError, Bot, Call, Upload, World

log = logging.getLogger("simtelegram")

BODY_LIMIT = 50 * 1024 * 1024
# Every method but getUpdates: each answers at once.
_METHODS = {**METHODS, **stars.METHODS, **profile.METHODS}


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


async def upload_params(request: Request) -> Params:
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


def body_params(query: str, content_type: str, body: bytes) -> Params:
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


class Ticks:
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


class Exchange:
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
        "started_clock",
        "wait",
        "world",
    )

    def __init__(self, world: World, name: str, agent: str) -> None:
        self.world = world
        self.name = name
        self.agent = agent
        self.started = time.time()
        # The call's length by the loop's clock, which the delay is measured on: the wall
        # clock may be slewed meanwhile.
        self.started_clock = time.monotonic()
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
            _call(
                bot_id,
                self.name,
                self.started,
                self._took(),
                answer.status,
                self.agent,
                self.params,
            )
        )
        return answer

    def _took(self) -> float:
        return time.monotonic() - self.started_clock

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
    bot_id: int,
    name: str,
    started: float,
    took: float,
    status: int,
    user_agent: str,
    params: Params,
) -> Call:
    chat = params.get("chat_id")
    text = params.get("text")
    return Call(
        bot_id=bot_id,
        method=name,
        started=started,
        at=started + took,
        status=status,
        user_agent=user_agent,
        chat_id=int(chat)
        if isinstance(chat, int | str) and str(chat).lstrip("-").isdigit()
        else None,
        text=text if isinstance(text, str) else None,
    )


async def answer_call(
    world: World,
    ticks: Ticks,
    token: str,
    name: str,
    client: tuple[str, int] | None,
    agent: str,
    read: Callable[[], Params],
) -> Answer:
    """One Bot API call answered in a task: its wait slept, a long poll awaited."""
    exchange = Exchange(world, name, agent)
    exchange.begin(token, read, client)
    if exchange.wait:
        await ticks.sleep(exchange.wait)
    await exchange.long_poll()
    return exchange.finish()
