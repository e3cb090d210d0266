"""billing's endpoints, a small class per feature: each method answers one operation of
`app.OPERATIONS`, which names it with its security (the bearer check is made by the route, from
that table, before the method runs)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from typing import Annotated, Any

import msgspec
from prometheus_client import Counter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from billing import ad_orders, errors, grants, invoices, money, reconcile, stars, store
from billing import sweep as sweeping
from billing.background import Background
from billing.gateways import STARS, TITLES, GatewayName
from billing.rates import RateUnavailable
from billing.settings import BillingSettings
from billing.webhooks import Verifier
from shared.clock import Clock
from shared.errors import Problem, decode_json, json_body, read_body, read_query
from shared.web import runtime

WEBHOOK_BODY_LIMIT = 64 * 1024

DELIVERIES = Counter(
    "billing_webhook_deliveries_total",
    "Authentic payment deliveries by what came of them",
    ["gateway", "outcome"],
)
REJECTED = Counter(
    "billing_webhook_rejected_total", "Deliveries refused with a 4xx", ["gateway", "reason"]
)


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


class RemovalRequest(msgspec.Struct, forbid_unknown_fields=True):
    telegram_user_id: TelegramUserId
    channel_id: ChannelId
    # One per person, channel and press of the owner's button: the same key again is the same
    # removal.
    request_key: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9:_-]{8,120}$")]
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


class Webhooks:
    """The gateways' signed callbacks: verified, recorded once, applied."""

    def __init__(self, verifiers: dict[str, Verifier], clock: Clock) -> None:
        self.verifiers = verifiers
        self.clock = clock

    async def receive(self, request: Request) -> Response:
        gateway = request.path_params["gateway"]
        verifier = self.verifiers.get(gateway)
        if verifier is None:
            raise errors.UnknownGateway(f"no payment gateway {gateway!r} is enabled")
        body = await read_body(request, WEBHOOK_BODY_LIMIT)
        now = self.clock.now()
        try:
            delivery = verifier.verify(request.headers, body, now)
        except errors.BillingError as error:
            REJECTED.labels(gateway, error.slug).inc()
            raise
        async with store.connection(runtime(request).pool) as conn:
            outcome = await store.record_delivery(conn, delivery, now)
        DELIVERIES.labels(gateway, outcome.recorded.value).inc()
        return JSONResponse(verifier.acknowledge(delivery, outcome, now))


class Sweeping:
    """What is due expired, called by cron."""

    def __init__(self, settings: BillingSettings, clock: Clock) -> None:
        self.settings = settings
        self.clock = clock

    async def sweep(self, request: Request) -> Response:
        async with store.connection(runtime(request).pool) as conn:
            answer = await sweeping.sweep(
                conn, self.clock.now(), self.settings.sweep_batch, self.clock
            )
        return JSONResponse(answer)


class Invoicing:
    """Invoices for the bot's pay flows, the offers they are made from, and Stars'
    pre-checkout. `enabled`: the gateways an invoice can be made for."""

    def __init__(self, settings: BillingSettings, clock: Clock, enabled: list[str]) -> None:
        self.settings = settings
        self.clock = clock
        self.enabled = enabled

    async def create_invoice(self, request: Request) -> Response:
        body = await json_body(request, InvoiceRequest, limit=4096)
        if body.gateway not in self.enabled:
            raise Problem(422, "unknown-gateway", f"gateway {body.gateway!r} is not enabled")
        async with store.connection(runtime(request).pool) as conn:
            invoice = await invoices.create_invoice(
                conn,
                body.telegram_user_id,
                body.channel_id,
                body.gateway,
                body.plan_id,
                body.coupon,
                self.clock.now(),
                self.enabled,
                body.request_key,
            )
        amount = money.minor_to_text(invoice.amount_minor, invoice.currency)
        # Stars are paid inside Telegram: the bot sends the invoice itself.
        pay_url = None
        if body.gateway in self.settings.pay_urls:
            pay_url = self.settings.pay_urls[body.gateway].format(
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

    async def gateways(self, request: Request) -> Response:
        """The gateways an invoice can be made for; with `channel_id`, the channel's offer too
        (null when it is not a paid channel with a default plan)."""
        wanted = read_query(request.query_params, GatewaysQuery)
        answer: dict[str, object] = {
            "gateways": self.enabled,
            "titles": {name: TITLES[name] for name in self.enabled},
        }
        if wanted.channel_id is not None:
            async with store.connection(runtime(request).pool) as conn:
                offer = await invoices.channel_offer(conn, wanted.channel_id)
            answer["offer"] = (
                None if offer is None else _offer(wanted.channel_id, offer, self.enabled)
            )
        return JSONResponse(answer)

    async def pre_checkout(self, request: Request) -> Response:
        """Whether Telegram may take the Stars: `{"ok": true}`, or `{"ok": false, "reason"}`."""
        body = await json_body(request, PreCheckout, limit=4096)
        async with store.connection(runtime(request).pool) as conn:
            cur = await conn.execute(
                store.Q["stars_invoice"], {"order_reference": body.invoice_payload}
            )
            invoice = await cur.fetchone()
        reason = stars.refusal(
            invoice, body.telegram_user_id, body.currency, body.total_amount, self.clock.now()
        )
        return JSONResponse({"ok": True} if reason is None else {"ok": False, "reason": reason})


class Refunds:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def refund(self, request: Request) -> Response:
        """The owner's refund of a payment. Stars: a request botedge performs with
        `refundStarPayment`, answered 202 with its state (asking again, the same request);
        Telegram's `refunded_payment` then reverses the payment as any refund does. Card
        payments are refunded in the gateway's dashboard and arrive by webhook: 422."""
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
                    "now": self.clock.now(),
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


class Reconciliation:
    """The ledger against its history, channels and Stars against Telegram; and the fix."""

    def __init__(self, settings: BillingSettings, clock: Clock, background: Background) -> None:
        self.settings = settings
        self.clock = clock
        self.background = background

    async def report(self, request: Request) -> Response:
        """Each membership against the replay of its history: those that differ."""
        wanted = read_query(request.query_params, ReconcileQuery)
        now = self.clock.now()
        async with store.connection(runtime(request).pool) as conn:
            checked, found = await reconcile.ledger(conn, now, wanted.since)
            members = await reconcile.channels(
                conn, self.background.botedge, now, self.settings.reconcile_resend_after
            )
            paid = await reconcile.stars(conn, self.background.botedge, wanted.since)
        return JSONResponse(
            {
                "ledger": {"checked": checked, "differences": [d.as_json() for d in found]},
                "channels": [c.as_json() for c in members],
                "stars": [c.as_json() for c in paid],
            }
        )

    async def fix(self, request: Request) -> Response:
        """The report's differences written as their history has them, each under its lock."""
        wanted = read_query(request.query_params, ReconcileQuery)
        now = self.clock.now()
        async with store.connection(runtime(request).pool) as conn:
            checked, found = await reconcile.ledger(conn, now, wanted.since)
            fixed = [
                done for d in found if (done := await reconcile.fix(conn, d, self.clock.now()))
            ]
            # Payments Telegram took that we never recorded, then the channels once the ledger
            # is right: who should be inside follows from it.
            paid = await reconcile.stars(conn, self.background.botedge, wanted.since)
            for stars_check in paid:
                await reconcile.fix_stars(conn, stars_check, self.clock.now())
            members = await reconcile.channels(
                conn, self.background.botedge, now, self.settings.reconcile_resend_after
            )
            for check in members:
                await reconcile.fix_channel(conn, self.background.botedge, check, self.clock.now())
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


class Access:
    """Access without a payment: an owner's grant, a free trial, an access code."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def grant(self, request: Request) -> Response:
        """Access until a date without a payment (an owner's import, a partner)."""
        body = await json_body(request, GrantRequest, limit=4096)
        now = self.clock.now()
        if body.until <= now:
            raise errors.InvalidBody(
                "until must be in the future", field="until", code="out-of-range"
            )
        async with store.connection(runtime(request).pool) as conn:
            done = await grants.grant_access(
                conn, body.telegram_user_id, body.channel_id, body.until, body.reason, now
            )
        if done is None:
            raise errors.UnknownChannel("no paid channel by that id")
        changed, membership = done
        return JSONResponse({"applied": changed, "membership": membership.as_json()})

    async def remove(self, request: Request) -> Response:
        """The membership ended now by the owner: 200 with whether it changed anything (the
        same request key again changes nothing) and the membership after."""
        body = await json_body(request, RemovalRequest, limit=4096)
        async with store.connection(runtime(request).pool) as conn:
            changed, membership = await grants.remove_member(
                conn,
                body.telegram_user_id,
                body.channel_id,
                body.request_key,
                body.reason,
                self.clock.now(),
            )
        return JSONResponse({"applied": changed, "membership": membership.as_json()})

    async def trial(self, request: Request) -> Response:
        """The channel's free trial for the person: 201 with the membership, or 409 when they
        had it (or a membership there) before."""
        body = await json_body(request, TrialRequest, limit=4096)
        async with store.connection(runtime(request).pool) as conn:
            membership = await grants.take_trial(
                conn, body.telegram_user_id, body.channel_id, body.plan_id, self.clock.now()
            )
        return JSONResponse({"membership": membership.as_json()}, status_code=201)

    async def redeem(self, request: Request) -> Response:
        """An access code's days for the person: 200 with the channel and the membership;
        422 `code-refused` or 429 `too-many-guesses` otherwise."""
        body = await json_body(request, RedeemRequest, limit=4096)
        async with store.connection(runtime(request).pool) as conn:
            done = await grants.redeem_code(
                conn, body.telegram_user_id, body.code, self.clock.now()
            )
        return JSONResponse(
            {
                "channel_id": done.channel_id,
                "title": done.title,
                "days": done.days,
                "membership": done.membership.as_json(),
            }
        )


class AdOrders:
    """The owner's decisions on ad orders: approved (priced in TRX now), rejected, cancelled."""

    def __init__(self, settings: BillingSettings, clock: Clock, background: Background) -> None:
        self.settings = settings
        self.clock = clock
        self.background = background

    async def approve(self, request: Request) -> Response:
        order_id = _order_id(request)
        async with store.connection(runtime(request).pool) as conn:
            # Refused before any rate is fetched: the order, its state, the shop's address.
            order = await ad_orders.read(conn, order_id)
        rate = None
        if order["accepts_trx"]:
            try:
                rate = await self.background.rates.rate()
            except RateUnavailable:
                raise errors.RateUnavailable("no TRX rate source answered; retry") from None
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            answer = await ad_orders.approve(
                conn, order_id, rate, self.clock.now(), self.settings.ad_order_pay_hours
            )
        return JSONResponse(answer)

    async def reject(self, request: Request) -> Response:
        return await self._end(request, "rejected", ("requested",))

    async def cancel(self, request: Request) -> Response:
        return await self._end(request, "cancelled", ("requested", "approved"))

    async def _end(self, request: Request, status: str, allowed: tuple[str, ...]) -> Response:
        order_id = _order_id(request)
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            answer = await ad_orders.end(conn, order_id, status, allowed, self.clock.now())
        return JSONResponse(answer)
