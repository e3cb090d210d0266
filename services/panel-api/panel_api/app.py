"""The panel API app."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.metadata
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from panel_api import auth, errors, first_run, page
from panel_api.access import Access
from panel_api.access_codes import AccessCodes
from panel_api.admission import Admission
from panel_api.adshop import AdShop
from panel_api.bot_texts import Words
from panel_api.bots import Bots
from panel_api.broadcasts import Broadcasts
from panel_api.campaigns import Campaigns
from panel_api.contract import OPERATIONS, openapi
from panel_api.coupons import Coupons
from panel_api.gate import Gate
from panel_api.internal import Internal
from panel_api.ledger import Ledger
from panel_api.members import Members
from panel_api.operations import Operations
from panel_api.passwords import Passwords
from panel_api.plans import Plans
from panel_api.settings import PanelSettings
from panel_api.stats import Statistics
from panel_api.team import Team
from shared.breaker import Breakers
from shared.clock import SYSTEM_CLOCK, Clock
from shared.errors import service_error_handler
from shared.openapi import handlers
from shared.secretbox import SecretBox
from shared.web import Runtime, create_service_app

# The one place the panel's errors meet HTTP.
STATUS: dict[type[errors.PanelError], int] = {
    errors.DatabaseUnavailable: 503,
    errors.BadCredentials: 401,
    errors.BadSetupCode: 401,
    errors.InvalidToken: 401,
    errors.MissingCredentials: 401,
    errors.SetupCodeExpired: 401,
    errors.TokenExpired: 401,
    errors.Forbidden: 403,
    errors.NotDead: 404,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.InvalidValue: 422,
    errors.TooManyRequests: 429,
}

Endpoint = Callable[[Request], Awaitable[Response]]


def build_routes(access: Access, features: Sequence[object]) -> list[Route]:
    """The routes of `OPERATIONS`, each answered by its handler on the feature of that class and
    guarded by its least role; an operation whose feature is not given stops the app."""
    routes = []
    entry = "its contract.OPERATIONS entry"
    for (method, path), endpoint in handlers(OPERATIONS, features, entry).items():
        op = OPERATIONS[method, path]
        routes.append(
            Route(
                path,
                endpoint if op.least is None else access.guard(op.least, endpoint),
                methods=[method],
            )
        )
    return routes


def create_app(
    settings: PanelSettings,
    *,
    clock: Clock = SYSTEM_CLOCK,
    announce: Callable[[str], None] = first_run.print_code,
) -> Starlette:
    """`announce` shows a first start's setup code to whoever runs the service."""

    breakers = Breakers()
    billing = Internal("billing", settings.billing_url, settings.service_token, breakers)
    botedge = Internal("botedge", settings.botedge_url, settings.service_token, breakers)

    @asynccontextmanager
    async def lifespan(state: Runtime) -> AsyncIterator[None]:
        stopping = asyncio.Event()
        offer = asyncio.get_running_loop().create_task(
            first_run.offer_code(state.pool, clock, announce, stopping)
        )
        try:
            async with billing, botedge:
                yield None
        finally:
            stopping.set()
            offer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await offer

    passwords = Passwords(settings.bcrypt_rounds)
    installation = auth.Installation()
    sign_in = auth.SignIn(
        settings.jwt_secret, installation, clock, settings.trusted_proxies, passwords
    )
    first_start = first_run.Setup(clock, settings.trusted_proxies, passwords)
    team = Team(clock, passwords)
    ledger = Ledger(billing, clock)
    operations = Operations(billing, clock)
    members = Members(clock, billing)
    bots = Bots(clock, SecretBox(settings.bot_token_key), botedge)
    words = Words(clock, botedge)
    gate = Gate(clock, botedge)
    admission = Admission(clock, billing)
    shop = AdShop(clock, billing)
    campaigns = Campaigns(clock, botedge)
    plans = Plans(clock)
    coupons = Coupons(clock)
    access_codes = AccessCodes(clock)
    broadcasts = Broadcasts(clock, botedge)
    statistics = Statistics(clock)
    return create_service_app(
        settings.common,
        breakers=breakers,
        routes=[
            *build_routes(
                Access(settings.jwt_secret, installation, clock),
                [
                    sign_in,
                    first_start,
                    team,
                    ledger,
                    members,
                    operations,
                    bots,
                    words,
                    gate,
                    admission,
                    plans,
                    coupons,
                    access_codes,
                    shop,
                    campaigns,
                    broadcasts,
                    statistics,
                ],
            ),
            Route("/openapi.json", _document(), methods=["GET"]),
            # Last: every other GET is the page.
            *page.routes(),
        ],
        service_lifespan=lifespan,
        exception_handlers={errors.PanelError: service_error_handler(STATUS)},
    )


@functools.cache
def _encoded(version: str) -> bytes:
    """The document, built once a process (about 60 ms of msgspec's schema work): every app
    made in it serves the same."""
    return msgspec.json.encode(openapi(version))


def _document() -> Endpoint:
    body = _encoded(importlib.metadata.version("gatehouse"))

    async def endpoint(request: Request) -> Response:
        return Response(body, media_type="application/json")

    return endpoint
