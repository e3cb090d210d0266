"""Billing's HTTP app: payment webhooks, the sweep and the internal invoice endpoint."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Collection
from importlib.metadata import version
from typing import Annotated, Any

import msgspec
from prometheus_client import Counter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from billing import ad_orders, errors, invoices, money, reconcile, stars, store
from billing import sweep as sweeping
from billing.background import Background
from billing.gateways import STARS, TITLES, GatewayName
from billing.rates import RateUnavailable
from billing.settings import BillingSettings
from billing.webhooks import Stripe, Subgate, Verifier, WayForPay
from shared import openapi
from shared.breaker import Breakers
from shared.clock import SYSTEM_CLOCK, Clock
from shared.errors import (
    Problem,
    decode_json,
    json_body,
    read_body,
    read_query,
    service_error_handler,
)
from shared.openapi import Object, Operation
from shared.web import create_service_app, require_bearer, runtime

log = logging.getLogger("billing.app")

WEBHOOK_BODY_LIMIT = 64 * 1024

DELIVERIES = Counter(
    "billing_webhook_deliveries_total",
    "Authentic payment deliveries by what came of them",
    ["gateway", "outcome"],
)
REJECTED = Counter(
    "billing_webhook_rejected_total", "Deliveries refused with a 4xx", ["gateway", "reason"]
)


def build_verifiers(settings: BillingSettings) -> dict[str, Verifier]:
    verifiers: dict[str, Verifier] = {}
    if settings.subgate_webhook_secret is not None:
        verifiers[Subgate.name] = Subgate(settings.subgate_webhook_secret)
    if settings.wayforpay_secret_key is not None and settings.wayforpay_merchant_account:
        verifiers[WayForPay.name] = WayForPay(
            settings.wayforpay_merchant_account, settings.wayforpay_secret_key
        )
    if settings.stripe_webhook_secrets:
        verifiers[Stripe.name] = Stripe(settings.stripe_webhook_secrets)
    return verifiers


# The one place billing's errors meet HTTP.
STATUS: dict[type[errors.BillingError], int] = {
    errors.Malformed: 400,
    errors.BadSignature: 401,
    errors.StaleTimestamp: 401,
    errors.UnknownGateway: 404,
    errors.UnknownChannel: 404,
    errors.UnknownPlan: 404,
    errors.UnknownPayment: 404,
    errors.GatewayNotOffered: 422,
    errors.KeyReused: 422,
    errors.NotPayableThere: 422,
    errors.CouponRefused: 422,
    errors.TrialRefused: 409,
    errors.CodeRefused: 422,
    errors.TooManyGuesses: 429,
    errors.InvalidBody: 422,
    errors.UnknownAdOrder: 404,
    errors.OrderConflict: 409,
    errors.NoShopAddress: 422,
    errors.RateUnavailable: 503,
    errors.DatabaseUnavailable: 503,
    errors.BotedgeUnavailable: 503,
    errors.BotedgeRefused: 502,
}


# Telegram user ids and our channel ids as the database stores them (bigint, integer).
TelegramUserId = Annotated[int, msgspec.Meta(gt=0, le=2**63 - 1)]
ChannelId = Annotated[int, msgspec.Meta(gt=0, lt=2**31)]
PlanId = Annotated[int, msgspec.Meta(gt=0, lt=2**31)]


class InvoiceRequest(msgspec.Struct, forbid_unknown_fields=True):
    telegram_user_id: TelegramUserId
    channel_id: ChannelId
    gateway: GatewayName
    # Without it, the channel's default plan.
    plan_id: PlanId | None = None
    # A coupon's code as the person typed it.
    coupon: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
    # The caller's name for this request: asked again with it, the same invoice comes back.
    request_key: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9:_-]{1,64}$")] | None = None


class GrantRequest(msgspec.Struct, forbid_unknown_fields=True):
    telegram_user_id: TelegramUserId
    channel_id: ChannelId
    until: Annotated[dt.datetime, msgspec.Meta(tz=True)]
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class TrialRequest(msgspec.Struct, forbid_unknown_fields=True):
    telegram_user_id: TelegramUserId
    channel_id: ChannelId
    plan_id: PlanId


class RedeemRequest(msgspec.Struct, forbid_unknown_fields=True):
    telegram_user_id: TelegramUserId
    # As the person sent it; checked against the codes whatever its case.
    code: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class PreCheckout(msgspec.Struct, forbid_unknown_fields=True):
    """A `pre_checkout_query` as botedge received it."""

    telegram_user_id: TelegramUserId
    invoice_payload: Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
    currency: Annotated[str, msgspec.Meta(pattern="^[A-Z]{3}$")]
    total_amount: Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]


class RefundRequest(msgspec.Struct, forbid_unknown_fields=True):
    # Who asked, for the record (the panel member's email).
    requested_by: Annotated[str, msgspec.Meta(max_length=320)] | None = None


class ReconcileQuery(msgspec.Struct, forbid_unknown_fields=True):
    # Only memberships changed since then.
    since: Annotated[dt.datetime, msgspec.Meta(tz=True)] | None = None


class GatewaysQuery(msgspec.Struct, forbid_unknown_fields=True):
    channel_id: ChannelId | None = None


# What `GET /openapi.json` documents: every route, the body and query its handler decodes.
_SIGNED = (
    "A gateway's signed callback: the body as the gateway sent it, its signature in the "
    "gateway's header or field (docs/contracts.md)"
)
_AD_ORDER = (404, 409, 422)
OPERATIONS: dict[tuple[str, str], Operation] = {
    ("POST", "/v1/webhooks/payments/{gateway}"): Operation(
        _SIGNED, body=Object, security=None, problems=(401,)
    ),
    ("POST", "/v1/sweep"): Operation(
        "Expire what is due: memberships to grace and out, invoices, notices", security="sweep"
    ),
    ("POST", "/internal/invoices"): Operation(
        "An invoice at a plan, the same one again under its request key",
        status=201,
        body=InvoiceRequest,
        problems=(404,),
        rules=(
            "the gateway is on here",
            "the plan is sold through the gateway, Stars only for a plan in XTR",
            "the coupon applies to this person and plan",
            "a request_key names one person, channel and gateway",
        ),
    ),
    ("GET", "/internal/gateways"): Operation(
        "The gateways on; with channel_id, the channel's plans on sale", query=GatewaysQuery
    ),
    ("POST", "/internal/stars/pre-checkout"): Operation(
        "Whether Telegram may take the Stars of a pre-checkout query", body=PreCheckout
    ),
    ("POST", "/internal/payments/{payment_id:int}/refund"): Operation(
        "A Stars payment's refund, asked of botedge",
        status=202,
        body=RefundRequest,
        rules=("only an applied Stars payment; a gateway's refund arrives by its webhook",),
    ),
    ("GET", "/internal/reconcile"): Operation(
        "Memberships that differ from their history; channels and Stars against Telegram",
        query=ReconcileQuery,
    ),
    ("POST", "/internal/reconcile/fix"): Operation(
        "The differences written as their history has them", query=ReconcileQuery
    ),
    ("POST", "/internal/grants"): Operation(
        "Access until a date without a payment",
        body=GrantRequest,
        problems=(404,),
        rules=("until is in the future",),
    ),
    ("POST", "/internal/trials"): Operation(
        "The channel's free trial", status=201, body=TrialRequest, problems=(404, 409)
    ),
    ("POST", "/internal/access-codes/redeem"): Operation(
        "An access code's days",
        body=RedeemRequest,
        problems=(429,),
        rules=("the code is known, on, unexpired and not used up",),
    ),
    ("POST", "/internal/ad-orders/{order_id:int}/approve"): Operation(
        "An ad order approved, priced in TRX at the rate now",
        problems=_AD_ORDER,
        rules=("the shop has a TRON address",),
    ),
    ("POST", "/internal/ad-orders/{order_id:int}/reject"): Operation(
        "An ad order rejected", problems=_AD_ORDER
    ),
    ("POST", "/internal/ad-orders/{order_id:int}/cancel"): Operation(
        "An ad order cancelled", problems=_AD_ORDER
    ),
}
SECURITY = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "SERVICE_TOKEN"},
    "sweep": {"type": "http", "scheme": "bearer", "description": "SWEEP_TOKEN"},
}


def _order_id(request: Request) -> int:
    order_id = int(request.path_params["order_id"])
    if order_id >= 2**31:
        raise errors.UnknownAdOrder("no ad order by that id")
    return order_id


def _offer(channel_id: int, offer: invoices.Offer, enabled: Collection[str]) -> dict[str, Any]:
    """The channel's offer as the bot reads it: its plans on sale, and the first of them (the
    default, when it is on sale) in the fields the offer had before plans were listed."""
    plans = [
        {
            "id": plan["id"],
            "name": plan["name"],
            "amount": money.minor_to_text(int(plan["price_minor"]), plan["currency"]),
            "currency": plan["currency"],
            "period_days": plan["period_days"],
            "kind": plan["kind"],
            # A trial is not paid through any.
            "gateways": [] if plan["kind"] == "trial" else invoices.plan_gateways(plan, enabled),
            "is_default": plan["is_default"],
            # A bundle's channels, by title; one payment opens each.
            "channels": plan["channels"] or [],
        }
        for plan in offer.plans
    ]
    paid = [plan for plan in plans if plan["kind"] != "trial"] or plans
    first = next((plan for plan in paid if plan["is_default"]), paid[0])
    return {
        "channel_id": channel_id,
        "title": offer.title,
        "amount": first["amount"],
        "currency": first["currency"],
        "period_days": first["period_days"],
        "plans": plans,
    }


def create_app(settings: BillingSettings, *, clock: Clock = SYSTEM_CLOCK) -> Starlette:
    verifiers = build_verifiers(settings)
    # What an invoice can be made for: the gateways whose webhooks are on, and Stars, whose
    # payments botedge records.
    enabled = sorted([*verifiers, STARS.name])

    async def payment_webhook(request: Request) -> Response:
        gateway = request.path_params["gateway"]
        verifier = verifiers.get(gateway)
        if verifier is None:
            raise errors.UnknownGateway(f"no payment gateway {gateway!r} is enabled")
        body = await read_body(request, WEBHOOK_BODY_LIMIT)
        now = clock.now()
        try:
            delivery = verifier.verify(request.headers, body, now)
        except errors.BillingError as error:
            REJECTED.labels(gateway, error.slug).inc()
            raise
        async with store.connection(runtime(request).pool) as conn:
            outcome = await store.record_delivery(conn, delivery, now)
        DELIVERIES.labels(gateway, outcome.recorded.value).inc()
        return JSONResponse(verifier.acknowledge(delivery, outcome, now))

    async def sweep(request: Request) -> Response:
        require_bearer(request, settings.sweep_token)
        async with store.connection(runtime(request).pool) as conn:
            answer = await sweeping.sweep(conn, clock.now(), settings.sweep_batch, clock)
        return JSONResponse(answer)

    async def create_invoice(request: Request) -> Response:
        require_bearer(request, settings.service_token)
        body = await json_body(request, InvoiceRequest, limit=4096)
        if body.gateway not in enabled:
            raise Problem(422, "unknown-gateway", f"gateway {body.gateway!r} is not enabled")
        async with store.connection(runtime(request).pool) as conn:
            invoice = await invoices.create_invoice(
                conn,
                body.telegram_user_id,
                body.channel_id,
                body.gateway,
                body.plan_id,
                body.coupon,
                clock.now(),
                enabled,
                body.request_key,
            )
        amount = money.minor_to_text(invoice.amount_minor, invoice.currency)
        # Stars are paid inside Telegram: the bot sends the invoice itself.
        pay_url = None
        if body.gateway in settings.pay_urls:
            pay_url = settings.pay_urls[body.gateway].format(
                order_reference=invoice.order_reference, amount=amount, currency=invoice.currency
            )
        return JSONResponse(
            {
                "order_reference": invoice.order_reference,
                "amount": amount,
                "currency": invoice.currency,
                "gateway": body.gateway,
                "plan_id": invoice.plan_id,
                "pay_url": pay_url,
                # Before the coupon, and what it took off (0 without one).
                "list_price": money.minor_to_text(invoice.list_price_minor, invoice.currency),
                "discount": money.minor_to_text(invoice.discount_minor, invoice.currency),
            },
            status_code=201,
        )

    async def pre_checkout(request: Request) -> Response:
        """Whether Telegram may take the Stars: `{"ok": true}`, or `{"ok": false, "reason"}`."""
        require_bearer(request, settings.service_token)
        body = await json_body(request, PreCheckout, limit=4096)
        async with store.connection(runtime(request).pool) as conn:
            cur = await conn.execute(
                store.Q["stars_invoice"], {"order_reference": body.invoice_payload}
            )
            invoice = await cur.fetchone()
        reason = stars.refusal(
            invoice, body.telegram_user_id, body.currency, body.total_amount, clock.now()
        )
        return JSONResponse({"ok": True} if reason is None else {"ok": False, "reason": reason})

    async def refund(request: Request) -> Response:
        """The owner's refund of a payment. Stars: a request botedge performs with
        `refundStarPayment`, answered 202 with its state (asking again, the same request);
        Telegram's `refunded_payment` then reverses the payment as any refund does. Card
        payments are refunded in the gateway's dashboard and arrive by webhook: 422."""
        require_bearer(request, settings.service_token)
        payment_id = int(request.path_params["payment_id"])
        raw = await read_body(request, 4096)
        body = decode_json(raw, RefundRequest) if raw.strip() else RefundRequest()
        if payment_id >= 2**63:
            raise errors.UnknownPayment("no payment by that id")
        async with store.connection(runtime(request).pool) as conn:
            cur = await conn.execute(store.Q["stars_payment_to_refund"], {"payment_id": payment_id})
            payment = await cur.fetchone()
            if payment is None:
                raise errors.UnknownPayment("no payment by that id")
            if payment["gateway"] != STARS.name:
                raise errors.NotPayableThere(
                    f"a {payment['gateway']} payment is refunded in the gateway's dashboard;"
                    " its refund arrives here by webhook"
                )
            if not payment["applied"] or payment["bot_id"] is None:
                raise errors.InvalidBody("only an applied Stars payment can be refunded")
            cur = await conn.execute(
                store.Q["insert_star_refund_request"],
                {
                    "payment_id": payment_id,
                    "bot_id": payment["bot_id"],
                    "telegram_user_id": payment["telegram_user_id"],
                    "charge_id": payment["external_payment_id"],
                    "requested_by": body.requested_by,
                    "now": clock.now(),
                },
            )
            made = await store.one_row(cur)
        return JSONResponse(
            {
                "payment_id": payment_id,
                "request_id": made["id"],
                "state": made["state"],
                "refunded": bool(payment["refunded"]),
            },
            status_code=202,
        )

    def reconcile_query(request: Request) -> ReconcileQuery:
        return read_query(request.query_params, ReconcileQuery)

    async def reconcile_report(request: Request) -> Response:
        """Each membership against the replay of its history: those that differ."""
        require_bearer(request, settings.service_token)
        wanted = reconcile_query(request)
        now = clock.now()
        async with store.connection(runtime(request).pool) as conn:
            checked, found = await reconcile.ledger(conn, now, wanted.since)
            members = await reconcile.channels(
                conn, background.botedge, now, settings.reconcile_resend_after
            )
            paid = await reconcile.stars(conn, background.botedge, wanted.since)
        return JSONResponse(
            {
                "ledger": {"checked": checked, "differences": [d.as_json() for d in found]},
                "channels": [c.as_json() for c in members],
                "stars": [c.as_json() for c in paid],
            }
        )

    async def reconcile_fix(request: Request) -> Response:
        """The report's differences written as their history has them, each under its lock."""
        require_bearer(request, settings.service_token)
        wanted = reconcile_query(request)
        now = clock.now()
        async with store.connection(runtime(request).pool) as conn:
            checked, found = await reconcile.ledger(conn, now, wanted.since)
            fixed = [done for d in found if (done := await reconcile.fix(conn, d, clock.now()))]
            # Payments Telegram took that we never recorded, then the channels once the ledger
            # is right: who should be inside follows from it.
            paid = await reconcile.stars(conn, background.botedge, wanted.since)
            for stars_check in paid:
                await reconcile.fix_stars(conn, stars_check, clock.now())
            members = await reconcile.channels(
                conn, background.botedge, now, settings.reconcile_resend_after
            )
            for check in members:
                await reconcile.fix_channel(conn, background.botedge, check, clock.now())
        return JSONResponse(
            {
                "ledger": {
                    "checked": checked,
                    "differences": [d.as_json() for d in found],
                    "fixed": [d.as_json() for d in fixed],
                },
                "channels": [c.as_json() for c in members],
                "stars": [c.as_json() for c in paid],
            }
        )

    async def gateways(request: Request) -> Response:
        """The gateways an invoice can be made for; with `channel_id`, the channel's offer too
        (null when it is not a paid channel with a default plan)."""
        require_bearer(request, settings.service_token)
        wanted = read_query(request.query_params, GatewaysQuery)
        answer: dict[str, object] = {
            "gateways": enabled,
            "titles": {name: TITLES[name] for name in enabled},
        }
        if wanted.channel_id is not None:
            async with store.connection(runtime(request).pool) as conn:
                offer = await invoices.channel_offer(conn, wanted.channel_id)
            answer["offer"] = None if offer is None else _offer(wanted.channel_id, offer, enabled)
        return JSONResponse(answer)

    async def grant(request: Request) -> Response:
        """Access until a date without a payment (an owner's import, a partner)."""
        require_bearer(request, settings.service_token)
        body = await json_body(request, GrantRequest, limit=4096)
        now = clock.now()
        if body.until <= now:
            raise errors.InvalidBody(
                "until must be in the future", field="until", code="out-of-range"
            )
        async with store.connection(runtime(request).pool) as conn:
            done = await store.grant_access(
                conn, body.telegram_user_id, body.channel_id, body.until, body.reason, now
            )
        if done is None:
            raise errors.UnknownChannel("no paid channel by that id")
        changed, membership = done
        return JSONResponse({"applied": changed, "membership": membership.as_json()})

    async def trial(request: Request) -> Response:
        """The channel's free trial for the person: 201 with the membership, or 409 when they
        had it (or a membership there) before."""
        require_bearer(request, settings.service_token)
        body = await json_body(request, TrialRequest, limit=4096)
        async with store.connection(runtime(request).pool) as conn:
            membership = await store.take_trial(
                conn, body.telegram_user_id, body.channel_id, body.plan_id, clock.now()
            )
        return JSONResponse({"membership": membership.as_json()}, status_code=201)

    async def redeem(request: Request) -> Response:
        """An access code's days for the person: 200 with the channel and the membership;
        422 `code-refused` or 429 `too-many-guesses` otherwise."""
        require_bearer(request, settings.service_token)
        body = await json_body(request, RedeemRequest, limit=4096)
        async with store.connection(runtime(request).pool) as conn:
            done = await store.redeem_code(conn, body.telegram_user_id, body.code, clock.now())
        return JSONResponse(
            {
                "channel_id": done.channel_id,
                "title": done.title,
                "days": done.days,
                "membership": done.membership.as_json(),
            }
        )

    breakers = Breakers()
    background = Background(settings, clock, breakers)

    async def approve(request: Request) -> Response:
        require_bearer(request, settings.service_token)
        order_id = _order_id(request)
        async with store.connection(runtime(request).pool) as conn:
            # Refused before any rate is fetched: the order, its state, the shop's address.
            order = await ad_orders.read(conn, order_id)
        rate = None
        if order["accepts_trx"]:
            try:
                rate = await background.rates.rate()
            except RateUnavailable:
                raise errors.RateUnavailable("no TRX rate source answered; retry") from None
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            answer = await ad_orders.approve(
                conn, order_id, rate, clock.now(), settings.ad_order_pay_hours
            )
        return JSONResponse(answer)

    def ender(status: str, allowed: tuple[str, ...]) -> Callable[[Request], Awaitable[Response]]:
        async def end(request: Request) -> Response:
            require_bearer(request, settings.service_token)
            order_id = _order_id(request)
            async with store.connection(runtime(request).pool) as conn, conn.transaction():
                answer = await ad_orders.end(conn, order_id, status, allowed, clock.now())
            return JSONResponse(answer)

        return end

    return create_service_app(
        settings.common,
        service_lifespan=background.lifespan,
        breakers=breakers,
        routes=[
            openapi.route(
                msgspec.json.encode(
                    openapi.document(
                        "Gatehouse billing", version("gatehouse"), OPERATIONS, SECURITY
                    )
                )
            ),
            Route("/v1/webhooks/payments/{gateway}", payment_webhook, methods=["POST"]),
            Route("/v1/sweep", sweep, methods=["POST"]),
            Route("/internal/invoices", create_invoice, methods=["POST"]),
            Route("/internal/gateways", gateways, methods=["GET"]),
            Route("/internal/stars/pre-checkout", pre_checkout, methods=["POST"]),
            Route("/internal/payments/{payment_id:int}/refund", refund, methods=["POST"]),
            Route("/internal/reconcile", reconcile_report, methods=["GET"]),
            Route("/internal/reconcile/fix", reconcile_fix, methods=["POST"]),
            Route("/internal/grants", grant, methods=["POST"]),
            Route("/internal/trials", trial, methods=["POST"]),
            Route("/internal/access-codes/redeem", redeem, methods=["POST"]),
            Route("/internal/ad-orders/{order_id:int}/approve", approve, methods=["POST"]),
            Route(
                "/internal/ad-orders/{order_id:int}/reject",
                ender("rejected", ("requested",)),
                methods=["POST"],
            ),
            Route(
                "/internal/ad-orders/{order_id:int}/cancel",
                ender("cancelled", ("requested", "approved")),
                methods=["POST"],
            ),
        ],
        exception_handlers={errors.BillingError: service_error_handler(STATUS)},
    )
