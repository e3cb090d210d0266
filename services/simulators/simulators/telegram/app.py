"""The simulated Bot API: `/bot<token>/<method>` in Telegram's shapes, plus `/_sim/...` control.

Real error bodies (`{"ok": false, "error_code", "description", "parameters"}`), real limits
(about 1 message a second per private chat with short bursts, 20 a minute per group, 30 a
second per bot) answered with 429 and `retry_after`, and injected faults from `Faults`. The
methods are in `botapi`, the control endpoints in `control`, webhook delivery in `webhooks`
and what the server remembers in `state`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from shared.web import create_plain_app
from simulators.pages import page_routes
from simulators.statefile import StateFile, saving
from simulators.telegram import control, stars
from simulators.telegram.botapi import (
    Params,
)
from simulators.telegram.exchange import (
    BODY_LIMIT,
    Answer,
    Ticks,
    answer_call,
    body_params,
    upload_params,
)
from simulators.telegram.fastpath import bot_api_protocol
from simulators.telegram.state import ApiError, Faults, World
from simulators.telegram.webhooks import Deliveries

log = logging.getLogger("simtelegram")


async def bot_method(request: Request) -> Response:
    """A Bot API call the connection did not answer itself: an upload (multipart form), or a
    request pipelined behind another on its connection."""
    world: World = request.app.state.world
    content_type = request.headers.get("content-type", "")
    params: Params = {}
    unread: ApiError | None = None
    try:
        if content_type.startswith("multipart/"):
            params = await upload_params(request)
        else:
            # Its size is BodyLimitMiddleware's to check, as for every route.
            body = await request.body()
            params = body_params(
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

    answer = await answer_call(
        world,
        request.app.state.ticks,
        request.path_params["token"],
        request.path_params["method"].lower(),
        request.client and (request.client.host, request.client.port),
        request.headers.get("user-agent", ""),
        read,
    )
    return answer.response()


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
    app.state.ticks = Ticks()
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
