"""What keeps the money right, for the owner: gateway deliveries that need a look, access
events (grants, reminders, removals) and their retry, refunds, billing's reconciliation and
its fix, and an invoice made for a person. billing does the work; the panel asks it, relays
its answer and records the owner's writes in the audit log."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import errors, store
from panel_api.access import (
    CREATED,
    ID,
    Caller,
    Column,
    Listing,
    Paged,
    Who,
    answer,
    audit,
    query,
    relay_audited,
)
from panel_api.fields import Id, MembershipStatus, Minor, major
from panel_api.internal import Internal, relayed
from shared.clock import Clock
from shared.errors import json_body
from shared.web import runtime

R = TypeVar("R")

Attention = Literal["orphan", "amount_mismatch", "conflict", "gateway_mismatch", "refund_unknown"]


class NewInvoice(msgspec.Struct, forbid_unknown_fields=True):
    telegram_user_id: Annotated[int, msgspec.Meta(gt=0, le=2**63 - 1)]
    channel_id: Id
    # The card gateways billing knows (Stars invoices are sent by the bot).
    gateway: Literal["subgate", "wayforpay", "stripe"]
    # Without it, the channel's default plan.
    plan_id: Id | None = None


class InvoiceMade(msgspec.Struct):
    """billing's answer to a new invoice, relayed."""

    order_reference: str
    amount: str
    currency: str
    gateway: str
    plan_id: int
    pay_url: str


AccessKind = Literal[
    "grant", "reminder", "revoke", "expiry_notice", "checkout_declined", "checkout_lapsed"
]


class LedgerDifference(msgspec.Struct):
    """A membership whose state is not its history's: as it is, and as the replay has it."""

    person_id: int
    channel_id: int
    telegram_user_id: int
    title: str
    status: MembershipStatus
    expires_at: dt.datetime
    expected_status: MembershipStatus
    expected_expires_at: dt.datetime


class LedgerCheck(msgspec.Struct):
    checked: int
    differences: list[LedgerDifference]
    # After a fix: the differences written as their history has them.
    fixed: list[LedgerDifference] | None = None


class ChannelCheck(msgspec.Struct):
    """A paid channel against Telegram: how many people were asked about (those seen inside
    and those paying; the Bot API cannot list the rest), those Telegram could not be asked
    about, those inside who may not be, and payers not inside."""

    channel_id: int
    title: str
    checked: int
    unreachable: list[int]
    intruders: list[int]
    missing: list[int]


class StarPaid(msgspec.Struct):
    """A payment Telegram lists and our ledger does not have."""

    charge_id: str
    user_id: int | None
    payload: str | None
    amount: int | None
    date: int | None
    subscription: bool


class StarsCheck(msgspec.Struct):
    """A bot's Star payments in Telegram (`getStarTransactions`) against ours."""

    bot_id: int
    checked: int
    missing_here: list[StarPaid]
    # Our charge ids Telegram does not list.
    missing_there: list[str]


class Reconciled(msgspec.Struct):
    """billing's reconciliation report, relayed."""

    ledger: LedgerCheck
    channels: list[ChannelCheck]
    stars: list[StarsCheck]


class RefundAsked(msgspec.Struct):
    """billing's answer to a refund asked for, relayed."""

    payment_id: int
    request_id: int
    state: Literal["pending", "processing", "done", "failed"]
    refunded: bool


GatewayEventsSort = Literal[
    "id", "-id", "received_at", "-received_at", "gateway", "-gateway", "outcome", "-outcome"
]
GATEWAY_EVENTS = Listing(
    "gateway_events_list",
    key=(ID,),
    sorts=(
        ID,
        Column("received_at", dt.datetime),
        Column("gateway", str),
        Column("outcome", str),
    ),
    sort_type=GatewayEventsSort,
)


class GatewayEventQuery(Paged, kw_only=True):
    outcome: Attention | None = None
    sort: GatewayEventsSort = "-id"


class GatewayEvent(msgspec.Struct):
    id: int
    gateway: str
    event_type: str
    order_reference: str | None
    external_payment_id: str | None
    outcome: Attention
    payment_id: int | None
    # In English, for the API's readers; the panel says it in its language from the fields
    # below.
    detail: str | None
    received_at: dt.datetime
    # What was paid (the payment kept, if one was) and what the order reference's invoice
    # asks, in minor units and as major text; the gateway that invoice is paid through.
    paid_minor: Minor | None = None
    paid_currency: str | None = None
    paid: str | None = None
    due_minor: Minor | None = None
    due_currency: str | None = None
    due: str | None = None
    invoice_gateway: str | None = None

    def __post_init__(self) -> None:
        if self.paid_minor is not None and self.paid_currency:
            self.paid = major(self.paid_minor, self.paid_currency)
        if self.due_minor is not None and self.due_currency:
            self.due = major(self.due_minor, self.due_currency)


AccessState = Literal["pending", "processing", "done", "failed"]


AccessEventsSort = Literal[
    "id",
    "-id",
    "created_at",
    "-created_at",
    "available_at",
    "-available_at",
    "attempts",
    "-attempts",
    "state",
    "-state",
    "kind",
    "-kind",
]
ACCESS_EVENTS = Listing(
    "access_events_list",
    key=(ID,),
    sorts=(
        ID,
        CREATED,
        Column("available_at", dt.datetime),
        Column("attempts", int),
        Column("state", str),
        Column("kind", str),
    ),
    sort_type=AccessEventsSort,
)


class AccessEventQuery(Paged, kw_only=True):
    state: AccessState | None = None
    sort: AccessEventsSort = "-id"


class AccessEvent(msgspec.Struct):
    id: int
    kind: AccessKind
    person_id: int
    telegram_user_id: int
    person: Who
    channel_id: int
    channel_title: str
    state: AccessState
    attempts: int
    last_error: str | None
    created_at: dt.datetime
    available_at: dt.datetime
    done_at: dt.datetime | None


class AccessRetried(msgspec.Struct):
    id: int
    kind: AccessKind
    state: AccessState


class Gateways(msgspec.Struct):
    """The gateways billing holds keys for, which an invoice can be made for, with their names
    as people know them."""

    gateways: list[str]
    titles: dict[str, str]


class Operations:
    def __init__(self, billing: Internal, clock: Clock) -> None:
        self.billing = billing
        self.clock = clock

    async def gateway_events(self, request: Request, caller: Caller) -> Response:
        where = query(request, GatewayEventQuery)
        filters = {"outcome": where.outcome}
        return await GATEWAY_EVENTS.answered(request, where, filters, GatewayEvent)

    async def access_events(self, request: Request, caller: Caller) -> Response:
        where = query(request, AccessEventQuery)
        filters = {"state": where.state}
        return await ACCESS_EVENTS.answered(request, where, filters, AccessEvent)

    async def retry_access_event(self, request: Request, caller: Caller) -> Response:
        event_id = int(request.path_params["event_id"])
        if event_id >= 2**63:
            raise errors.NotFound("no failed access event by that id")
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            cur = await conn.execute(store.Q["retry_access_event"], {"id": event_id})
            row = await cur.fetchone()
            if row is None:
                raise errors.NotFound("no failed access event by that id")
            await audit(
                conn,
                caller,
                self.clock,
                "access_events.retry",
                f"access_event:{event_id}",
                {"state": "failed"},
                {"state": "pending"},
            )
        return answer(msgspec.convert(dict(row), AccessRetried))

    async def refund_payment(self, request: Request, caller: Caller) -> Response:
        """A Stars payment given back (billing asks botedge; Telegram confirms it with a
        message billing then applies). Card payments are refunded in the gateway's dashboard:
        billing's 422 comes back as it is."""
        payment_id = int(request.path_params["payment_id"])
        if payment_id >= 2**63:
            raise errors.NotFound("no payment by that id")
        answer = await self.billing.ask(
            "POST", f"/internal/payments/{payment_id}/refund", {"requested_by": caller.email}
        )
        return await relay_audited(
            request,
            caller,
            self.clock,
            answer,
            202,
            "payments.refund",
            f"payment:{payment_id}",
            lambda asked: {"request_id": asked["request_id"], "state": asked["state"]},
        )

    async def reconcile(self, request: Request, caller: Caller) -> Response:
        return relayed(await self.billing.ask("GET", "/internal/reconcile"))

    async def reconcile_fix(self, request: Request, caller: Caller) -> Response:
        answer = await self.billing.ask("POST", "/internal/reconcile/fix")
        return await relay_audited(
            request,
            caller,
            self.clock,
            answer,
            200,
            "reconcile.fix",
            "ledger",
            lambda report: {
                "fixed": [[d["person_id"], d["channel_id"]] for d in report["ledger"]["fixed"]]
            },
        )

    async def gateways(self, request: Request, caller: Caller) -> Response:
        return relayed(await self.billing.ask("GET", "/internal/gateways"))

    async def create_invoice(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewInvoice, limit=4096)
        answer = await self.billing.ask("POST", "/internal/invoices", msgspec.to_builtins(body))
        return relayed(answer)
