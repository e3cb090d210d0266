"""billing's HTTP app: what each route does and who may call it (`OPERATIONS`, which the
document and the routes are both built from), and the one place its features are put together."""

from __future__ import annotations

from importlib.metadata import version

import msgspec
from starlette.applications import Starlette

from billing import errors
from billing.background import Background
from billing.endpoints import (
    Access,
    AdOrders,
    GatewaysQuery,
    GrantRequest,
    InvoiceRequest,
    Invoicing,
    PreCheckout,
    ReconcileQuery,
    Reconciliation,
    RedeemRequest,
    RefundRequest,
    Refunds,
    RemovalRequest,
    Sweeping,
    TrialRequest,
    Webhooks,
)
from billing.gateways import STARS
from billing.settings import BillingSettings
from billing.webhooks import Stripe, Subgate, Verifier, WayForPay
from shared import openapi
from shared.breaker import Breakers
from shared.clock import SYSTEM_CLOCK, Clock
from shared.errors import service_error_handler
from shared.openapi import Object, Operation
from shared.web import create_service_app


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
    errors.UnknownMembership: 404,
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


# What `GET /openapi.json` documents: every route, the body and query its handler decodes.
_SIGNED = (
    "A gateway's signed callback: the body as the gateway sent it, its signature in the "
    "gateway's header or field (docs/contracts.md)"
)
_AD_ORDER = (404, 409, 422)
OPERATIONS: dict[tuple[str, str], Operation] = {
    ("POST", "/v1/webhooks/payments/{gateway}"): Operation(
        _SIGNED, body=Object, security=None, problems=(401,), handler=Webhooks.receive
    ),
    ("POST", "/v1/sweep"): Operation(
        "Expire what is due: memberships to grace and out, invoices, notices",
        security="sweep",
        handler=Sweeping.sweep,
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
        handler=Invoicing.create_invoice,
    ),
    ("GET", "/internal/gateways"): Operation(
        "The gateways on; with channel_id, the channel's plans on sale",
        query=GatewaysQuery,
        handler=Invoicing.gateways,
    ),
    ("POST", "/internal/stars/pre-checkout"): Operation(
        "Whether Telegram may take the Stars of a pre-checkout query",
        body=PreCheckout,
        handler=Invoicing.pre_checkout,
    ),
    ("POST", "/internal/payments/{payment_id:int}/refund"): Operation(
        "A Stars payment's refund, asked of botedge",
        status=202,
        body=RefundRequest,
        rules=("only an applied Stars payment; a gateway's refund arrives by its webhook",),
        handler=Refunds.refund,
    ),
    ("GET", "/internal/reconcile"): Operation(
        "Memberships that differ from their history; channels and Stars against Telegram",
        query=ReconcileQuery,
        handler=Reconciliation.report,
    ),
    ("POST", "/internal/reconcile/fix"): Operation(
        "The differences written as their history has them",
        query=ReconcileQuery,
        handler=Reconciliation.fix,
    ),
    ("POST", "/internal/grants"): Operation(
        "Access until a date without a payment",
        body=GrantRequest,
        problems=(404,),
        rules=("until is in the future",),
        handler=Access.grant,
    ),
    ("POST", "/internal/removals"): Operation(
        "A membership ended now: out of the channel, no grace",
        body=RemovalRequest,
        problems=(404,),
        rules=("a request_key names one person and channel",),
        handler=Access.remove,
    ),
    ("POST", "/internal/trials"): Operation(
        "The channel's free trial",
        status=201,
        body=TrialRequest,
        problems=(404, 409),
        handler=Access.trial,
    ),
    ("POST", "/internal/access-codes/redeem"): Operation(
        "An access code's days",
        body=RedeemRequest,
        problems=(429,),
        rules=("the code is known, on, unexpired and not used up",),
        handler=Access.redeem,
    ),
    ("POST", "/internal/ad-orders/{order_id:int}/approve"): Operation(
        "An ad order approved, priced in TRX at the rate now",
        problems=_AD_ORDER,
        rules=("the shop has a TRON address",),
        handler=AdOrders.approve,
    ),
    ("POST", "/internal/ad-orders/{order_id:int}/reject"): Operation(
        "An ad order rejected", problems=_AD_ORDER, handler=AdOrders.reject
    ),
    ("POST", "/internal/ad-orders/{order_id:int}/cancel"): Operation(
        "An ad order cancelled", problems=_AD_ORDER, handler=AdOrders.cancel
    ),
}
SECURITY = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "SERVICE_TOKEN"},
    "sweep": {"type": "http", "scheme": "bearer", "description": "SWEEP_TOKEN"},
}


def create_app(settings: BillingSettings, *, clock: Clock = SYSTEM_CLOCK) -> Starlette:
    """The composition root: every feature built once, the routes from `OPERATIONS`."""
    verifiers = build_verifiers(settings)
    # What an invoice can be made for: the gateways whose webhooks are on, and Stars, whose
    # payments botedge records.
    enabled = sorted([*verifiers, STARS.name])
    breakers = Breakers()
    background = Background(settings, clock, breakers)
    features = [
        Webhooks(verifiers, clock),
        Sweeping(settings, clock),
        Invoicing(settings, clock, enabled),
        Refunds(clock),
        Reconciliation(settings, clock, background),
        Access(clock),
        AdOrders(settings, clock, background),
    ]
    secrets = {"bearer": settings.service_token, "sweep": settings.sweep_token}
    document = openapi.document("Gatehouse billing", version("gatehouse"), OPERATIONS, SECURITY)
    return create_service_app(
        settings.common,
        service_lifespan=background.lifespan,
        breakers=breakers,
        routes=[
            openapi.route(msgspec.json.encode(document)),
            *openapi.routes(OPERATIONS, features, secrets),
        ],
        exception_handlers={errors.BillingError: service_error_handler(STATUS)},
    )
