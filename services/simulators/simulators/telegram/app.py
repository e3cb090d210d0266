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
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from shared.web import create_plain_app
from simulators.pages import page_routes
from simulators.statefile import StateFile, saving
from simulators.telegram import control, stars
from simulators.telegram.botapi import METHODS, Params, WithDescription, error_response, ok
from simulators.telegram.state import ApiError, Bot, Call, Faults, Upload, World
from simulators.telegram.webhooks import Deliveries


def _field(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


async def _params(request: Request) -> Params:
    params: Params = dict(request.query_params)
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        # An upload: files as parts, every other parameter a string (JSON for objects).
        async with request.form(max_part_size=10 * 1024 * 1024) as form:
            for key, value in form.multi_items():
                if isinstance(value, UploadFile):
                    params[key] = Upload(
                        value.filename or "", value.content_type or "", await value.read()
                    )
                else:
                    params[key] = _field(value)
        return params
    body = await request.body()
    if not body:
        return params
    content_type = request.headers.get("content-type", "")
    if "json" in content_type:
        try:
            loaded = json.loads(body)
        except ValueError:
            raise ApiError(400, "Bad Request: can't parse JSON object") from None
        if isinstance(loaded, dict):
            params.update(loaded)
    else:
        for key, value in parse_qsl(body.decode(errors="replace")):
            params[key] = _field(value)
    return params


async def _injected(world: World, bot: Bot, name: str, request: Request) -> Response | None:
    """The faults this call meets before it is answered: delays, a 502 for a bot that is
    down, and at random a 429, a 502, a 504 after a long wait or a 200 that is not JSON (never
    for getUpdates)."""
    faults = world.faults
    if bot.id in faults.down_bots:
        return HTMLResponse("<html><body><h1>502 Bad Gateway</h1></body></html>", 502)
    client = request.scope.get("client")
    if faults.connect_delay_ms and world.new_connection(
        (str(client[0]), int(client[1])) if client else None
    ):
        await asyncio.sleep(faults.connect_delay_ms / 1000)
    if faults.delay_ms:
        await asyncio.sleep(faults.delay_ms / 1000)
    if name == "getupdates":
        return None
    roll = world.random.random()
    if roll < faults.rate_429:
        raise ApiError(429, "", retry_after=faults.retry_after)
    if roll < faults.rate_429 + faults.rate_5xx:
        return HTMLResponse("<html><body><h1>502 Bad Gateway</h1></body></html>", 502)
    if roll < faults.rate_429 + faults.rate_5xx + faults.rate_timeout:
        await asyncio.sleep(faults.timeout_seconds)
        return HTMLResponse("<html><body>504 Gateway Time-out</body></html>", 504)
    if roll < faults.rate_429 + faults.rate_5xx + faults.rate_timeout + faults.rate_non_json:
        return HTMLResponse("<html><body>Please wait, checking your browser</body></html>", 200)
    return None


def _call(
    bot_id: int, name: str, started: float, status: int, request: Request, params: Params
) -> Call:
    chat = params.get("chat_id")
    text = params.get("text")
    return Call(
        bot_id=bot_id,
        method=name,
        started=started,
        at=time.time(),
        status=status,
        user_agent=request.headers.get("user-agent", ""),
        chat_id=int(chat)
        if isinstance(chat, int | str) and str(chat).lstrip("-").isdigit()
        else None,
        text=text if isinstance(text, str) else None,
    )


async def bot_method(request: Request) -> Response:
    world: World = request.app.state.world
    name = request.path_params["method"].lower()
    started = time.time()
    status = 200
    bot: Bot | None = None
    params: Params = {}
    world.in_flight[name] += 1
    try:
        bot = world.bot(request.path_params["token"])
        params = await _params(request)
        method = METHODS.get(name) or stars.METHODS.get(name)
        if method is None:
            raise ApiError(404, "Not Found: method not found")
        refused = await _injected(world, bot, name, request)
        if refused is not None:
            status = refused.status_code
            return refused
        result = await method(world, bot, params)
        if name == "setwebhook":
            world.on_update(bot)
        if isinstance(result, WithDescription):
            return ok(result.result, result.description)
        return ok(result)
    except ApiError as error:
        status = error.code
        return error_response(error)
    finally:
        world.in_flight[name] -= 1
        world.calls.append(_call(bot.id if bot else 0, name, started, status, request, params))


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
        body_limit=50 * 1024 * 1024,
    )
    app.state.world = world
    # A control call about a bot the simulator refuses is answered as the Bot API would.
    app.add_exception_handler(ApiError, lambda _, error: error_response(error))
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
