"""The panel API app."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx
from starlette.applications import Starlette
from starlette.routing import Route

from panel_api import auth, errors, first_run
from panel_api.access import Access, Handler, Role
from panel_api.bots import Bots
from panel_api.internal import Internal
from panel_api.ledger import Ledger
from panel_api.settings import PanelSettings
from panel_api.team import Team
from shared.clock import SYSTEM_CLOCK, Clock
from shared.errors import service_error_handler
from shared.secretbox import SecretBox
from shared.web import Runtime, create_service_app

# The one place the panel's errors meet HTTP.
STATUS: dict[type[errors.PanelError], int] = {errors.DatabaseUnavailable: 503}

# Every route behind a bearer token, with the least role it takes: the one table of who may do
# what. Sign-in, refresh, logout and setup take no token.
LEAST_ROLE: dict[tuple[str, str], Role] = {
    ("GET", "/v1/me"): Role.VIEWER,
    ("GET", "/v1/workspace"): Role.VIEWER,
    ("PATCH", "/v1/workspace"): Role.OWNER,
    ("GET", "/v1/team"): Role.OWNER,
    ("POST", "/v1/team"): Role.OWNER,
    ("PATCH", "/v1/team/{member_id:int}"): Role.OWNER,
    ("GET", "/v1/audit"): Role.OWNER,
    ("GET", "/v1/bots"): Role.VIEWER,
    ("POST", "/v1/bots"): Role.ADMIN,
    ("GET", "/v1/dead-updates"): Role.ADMIN,
    ("POST", "/v1/dead-updates/{inbox_id:int}/replay"): Role.ADMIN,
    ("GET", "/v1/people"): Role.VIEWER,
    ("GET", "/v1/memberships"): Role.VIEWER,
    ("GET", "/v1/memberships/{person_id:int}/{channel_id:int}/events"): Role.VIEWER,
    ("GET", "/v1/invoices"): Role.VIEWER,
    ("POST", "/v1/invoices"): Role.ADMIN,
    ("GET", "/v1/payments"): Role.VIEWER,
    ("GET", "/v1/gateway-events"): Role.VIEWER,
}


def guarded_routes(access: Access, handlers: dict[tuple[str, str], Handler]) -> list[Route]:
    if handlers.keys() != LEAST_ROLE.keys():
        raise RuntimeError("every guarded route needs its least role in LEAST_ROLE, and only those")
    return [
        Route(path, access.guard(LEAST_ROLE[(method, path)], handler), methods=[method])
        for (method, path), handler in handlers.items()
    ]


def create_app(
    settings: PanelSettings,
    *,
    clock: Clock = SYSTEM_CLOCK,
    announce: Callable[[str], None] = first_run.print_code,
    botedge_transport: httpx.AsyncBaseTransport | None = None,
    billing_transport: httpx.AsyncBaseTransport | None = None,
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
    team = Team(clock)
    ledger = Ledger(
        Internal("billing", settings.billing_url, settings.service_token, billing_transport)
    )
    bots = Bots(
        clock,
        SecretBox(settings.bot_token_key),
        Internal("botedge", settings.botedge_url, settings.service_token, botedge_transport),
    )
    handlers: dict[tuple[str, str], Handler] = {
        ("GET", "/v1/me"): team.me,
        ("GET", "/v1/workspace"): team.workspace,
        ("PATCH", "/v1/workspace"): team.change_workspace,
        ("GET", "/v1/team"): team.list_members,
        ("POST", "/v1/team"): team.add,
        ("PATCH", "/v1/team/{member_id:int}"): team.change,
        ("GET", "/v1/audit"): team.audit_log,
        ("GET", "/v1/bots"): bots.list_bots,
        ("POST", "/v1/bots"): bots.add_bot,
        ("GET", "/v1/dead-updates"): bots.list_dead,
        ("POST", "/v1/dead-updates/{inbox_id:int}/replay"): bots.replay,
        ("GET", "/v1/people"): ledger.people,
        ("GET", "/v1/memberships"): ledger.memberships,
        ("GET", "/v1/memberships/{person_id:int}/{channel_id:int}/events"): ledger.history,
        ("GET", "/v1/invoices"): ledger.invoices,
        ("POST", "/v1/invoices"): ledger.create_invoice,
        ("GET", "/v1/payments"): ledger.payments,
        ("GET", "/v1/gateway-events"): ledger.gateway_events,
    }
    return create_service_app(
        settings.common,
        routes=[
            *sign_in.routes(),
            Route("/v1/setup", first_start.create_owner, methods=["POST"]),
            *guarded_routes(Access(settings.jwt_secret, clock), handlers),
        ],
        service_lifespan=lifespan,
        exception_handlers={errors.PanelError: service_error_handler(STATUS)},
    )
