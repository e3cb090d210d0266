"""The panel API app."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from panel_api import auth, errors, first_run, page
from panel_api.access import Access, Handler
from panel_api.admission import Admission
from panel_api.adshop import AdShop
from panel_api.bots import Bots
from panel_api.contract import OPERATIONS, openapi
from panel_api.gate import Gate
from panel_api.internal import Internal
from panel_api.ledger import Ledger
from panel_api.passwords import Passwords
from panel_api.settings import PanelSettings
from panel_api.team import Team
from shared.clock import SYSTEM_CLOCK, Clock
from shared.errors import service_error_handler
from shared.secretbox import SecretBox
from shared.web import Runtime, create_service_app

# The one place the panel's errors meet HTTP.
STATUS: dict[type[errors.PanelError], int] = {
    errors.DatabaseUnavailable: 503,
    errors.InvalidValue: 422,
}

Key = tuple[str, str]
Endpoint = Callable[[Request], Awaitable[Response]]


def build_routes(
    access: Access, guarded: dict[Key, Handler], public: dict[Key, Endpoint]
) -> list[Route]:
    """The routes of `OPERATIONS`, each guarded by its least role; a handler missing from the
    table, or a table entry with no handler, stops the app from being built."""
    keys = {key for key, op in OPERATIONS.items() if op.least is not None}
    if guarded.keys() != keys or public.keys() != OPERATIONS.keys() - keys:
        raise RuntimeError("every route needs its entry in contract.OPERATIONS, and only those")
    routes = []
    for (method, path), op in OPERATIONS.items():
        endpoint = (
            public[(method, path)]
            if op.least is None
            else access.guard(op.least, guarded[(method, path)])
        )
        routes.append(Route(path, endpoint, methods=[method]))
    return routes


def create_app(
    settings: PanelSettings,
    *,
    clock: Clock = SYSTEM_CLOCK,
    announce: Callable[[str], None] = first_run.print_code,
) -> Starlette:
    """`announce` shows a first start's setup code to whoever runs the service."""

    billing = Internal("billing", settings.billing_url, settings.service_token)
    botedge = Internal("botedge", settings.botedge_url, settings.service_token)

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
    sign_in = auth.SignIn(settings.jwt_secret, clock, settings.trusted_proxies, passwords)
    first_start = first_run.Setup(clock, settings.trusted_proxies, passwords)
    team = Team(clock, passwords)
    ledger = Ledger(billing, clock)
    bots = Bots(clock, SecretBox(settings.bot_token_key), botedge)
    gate = Gate(clock, botedge)
    admission = Admission(clock, billing)
    shop = AdShop(clock, billing)
    public: dict[Key, Endpoint] = {
        ("POST", "/v1/auth/login"): sign_in.login,
        ("POST", "/v1/auth/refresh"): sign_in.refresh,
        ("POST", "/v1/auth/logout"): sign_in.logout,
        ("POST", "/v1/setup"): first_start.create_owner,
    }
    guarded: dict[Key, Handler] = {
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
        ("GET", "/v1/dashboard"): ledger.dashboard,
        ("GET", "/v1/people"): ledger.people,
        ("GET", "/v1/memberships"): ledger.memberships,
        ("GET", "/v1/memberships/{person_id:int}/{channel_id:int}/events"): ledger.history,
        ("GET", "/v1/invoices"): ledger.invoices,
        ("POST", "/v1/invoices"): ledger.create_invoice,
        ("GET", "/v1/payments"): ledger.payments,
        ("GET", "/v1/gateway-events"): ledger.gateway_events,
        ("GET", "/v1/access-events"): ledger.access_events,
        ("POST", "/v1/access-events/{event_id:int}/retry"): ledger.retry_access_event,
        ("GET", "/v1/channels"): gate.channels,
        ("POST", "/v1/channels"): gate.add_channel,
        ("PATCH", "/v1/channels/{channel_id:int}"): gate.change_channel,
        ("PUT", "/v1/bots/{bot_id:int}/default-gate"): gate.set_default_gate,
        ("GET", "/v1/channels/{channel_id:int}/whitelist"): admission.whitelist,
        ("POST", "/v1/channels/{channel_id:int}/whitelist"): admission.add_to_whitelist,
        (
            "DELETE",
            "/v1/channels/{channel_id:int}/whitelist/{telegram_user_id:int}",
        ): admission.remove_from_whitelist,
        ("POST", "/v1/channels/{channel_id:int}/import"): admission.import_members,
        ("POST", "/v1/grants"): admission.grant,
        ("GET", "/v1/contents"): gate.contents,
        ("POST", "/v1/contents"): gate.add_content,
        ("PATCH", "/v1/contents/{content_id:int}"): gate.change_content,
        ("DELETE", "/v1/contents/{content_id:int}"): gate.delete_content,
        ("GET", "/v1/ad-slots"): shop.slots,
        ("POST", "/v1/ad-slots"): shop.add_slot,
        ("PATCH", "/v1/ad-slots/{slot_id:int}"): shop.change_slot,
        ("GET", "/v1/ad-orders"): shop.orders,
        ("GET", "/v1/ad-orders/{order_id:int}"): shop.order,
        ("POST", "/v1/ad-orders/{order_id:int}/approve"): shop.step("approve"),
        ("POST", "/v1/ad-orders/{order_id:int}/reject"): shop.step("reject"),
        ("POST", "/v1/ad-orders/{order_id:int}/cancel"): shop.step("cancel"),
    }
    return create_service_app(
        settings.common,
        routes=[
            *build_routes(Access(settings.jwt_secret, clock), guarded, public),
            Route("/openapi.json", _document(), methods=["GET"]),
            # Last: every other GET is the page.
            *page.routes(),
        ],
        service_lifespan=lifespan,
        exception_handlers={errors.PanelError: service_error_handler(STATUS)},
    )


def _document() -> Endpoint:
    body = msgspec.json.encode(openapi(importlib.metadata.version("gatehouse")))

    async def endpoint(request: Request) -> Response:
        return Response(body, media_type="application/json")

    return endpoint
