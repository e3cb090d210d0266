"""The panel API app."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.routing import Route

from panel_api import auth, errors, first_run
from panel_api.settings import PanelSettings
from shared.clock import SYSTEM_CLOCK, Clock
from shared.errors import service_error_handler
from shared.web import Runtime, create_service_app

# The one place the panel's errors meet HTTP.
STATUS: dict[type[errors.PanelError], int] = {errors.DatabaseUnavailable: 503}


def create_app(
    settings: PanelSettings,
    *,
    clock: Clock = SYSTEM_CLOCK,
    announce: Callable[[str], None] = first_run.print_code,
) -> Starlette:
    """`announce` shows a first start's setup code to whoever runs the service."""

    @asynccontextmanager
    async def lifespan(state: Runtime) -> AsyncIterator[None]:
        stopping = asyncio.Event()
        offer = asyncio.get_running_loop().create_task(
            first_run.offer_code(state.pool, clock, announce, stopping)
        )
        try:
            yield None
        finally:
            stopping.set()
            offer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await offer

    sign_in = auth.SignIn(settings.jwt_secret, clock, settings.trusted_proxies)
    first_start = first_run.Setup(clock, settings.trusted_proxies)
    return create_service_app(
        settings.common,
        routes=[
            *sign_in.routes(),
            Route("/v1/setup", first_start.create_owner, methods=["POST"]),
        ],
        service_lifespan=lifespan,
        exception_handlers={errors.PanelError: service_error_handler(STATUS)},
    )
