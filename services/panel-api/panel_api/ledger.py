"""What billing and botedge keep about people and money, read for the owner: each bot's
visitors, memberships and their history, invoices, payments, and the gateway deliveries that
need a look. Creating an invoice is billing's to do: the panel asks billing and relays."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import errors, exports, store
from panel_api.access import (
    CREATED,
    ID,
    Caller,
    Column,
    Limit,
    Listing,
    Paged,
    Search,
    Sorted,
    Who,
    Word,
    answer,
    audit,
    converted,
    person_search,
    query,
)
from panel_api.internal import Internal, relayed
from shared.clock import Clock
from shared.currencies import major_text
from shared.errors import json_body
from shared.units import decimal_text
from shared.web import runtime

_LOW = 2**31
Id = Annotated[int, msgspec.Meta(ge=1, lt=_LOW)]
MembershipStatus = Literal["active", "grace", "expired"]
Attention = Literal["orphan", "amount_mismatch", "conflict", "gateway_mismatch", "refund_unknown"]
# Amounts in minor units, as text: exact whatever their size.
Minor = str
R = TypeVar("R")


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


BOT = Column("bot_id", int)
PEOPLE = Listing(
    "people_list",
    key=(BOT, Column("person_id", int)),
    sorts=(
        BOT,
        Column("first_seen_at", dt.datetime),
        Column("last_seen_at", dt.datetime),
        Column("telegram_user_id", int),
    ),
)


class PeopleExport(msgspec.Struct, kw_only=True):
    bot: Id | None = None
    q: Search | None = None
    sort: PEOPLE.sort_values = "bot_id"  # type: ignore[name-defined]


class PeopleQuery(PeopleExport, kw_only=True):
    limit: Limit = 50
    cursor: Word | None = None


class Visitor(msgspec.Struct):
    bot_id: int
    person_id: int
    telegram_user_id: int
    username: str | None
    first_name: str
    last_name: str | None
    first_seen_at: dt.datetime
    last_seen_at: dt.datetime
    blocked: bool


PERSON = Column("person_id", int)
MEMBERSHIPS = Listing(
    "memberships_list",
    key=(PERSON, Column("channel_id", int)),
    sorts=(
        PERSON,
        Column("status", str),
        Column("expires_at", dt.datetime),
        Column("updated_at", dt.datetime),
    ),
)


class MembershipExport(msgspec.Struct, kw_only=True):
    status: MembershipStatus | None = None
    channel: Id | None = None
    q: Search | None = None
    sort: MEMBERSHIPS.sort_values = "person_id"  # type: ignore[name-defined]


class MembershipQuery(MembershipExport, kw_only=True):
    limit: Limit = 50
    cursor: Word | None = None


class Membership(msgspec.Struct):
    person_id: int
    telegram_user_id: int
    person: Who
    channel_id: int
    channel_title: str
    status: MembershipStatus
    expires_at: dt.datetime
    grace_days: int
    updated_at: dt.datetime
    # A Telegram Stars subscription behind it: Telegram renews it while `active`; `canceled`
    # runs to `expires_at`; `failed`, Telegram could not take the Stars. None: no subscription.
    stars_renewal: Literal["active", "canceled", "failed"] | None = None
    # When Telegram charges next (the latest payment's subscription_expiration_date).
    stars_renews_at: dt.datetime | None = None


class MembershipEvent(msgspec.Struct):
    id: int
    from_status: MembershipStatus | None
    to_status: MembershipStatus
    old_expires_at: dt.datetime | None
    new_expires_at: dt.datetime
    cause: Literal["payment", "sweep", "grant", "trial", "refund", "reconcile"]
    payment_id: int | None
    paid_at: dt.datetime | None
    period_days: int | None
    at: dt.datetime


class History(msgspec.Struct):
    """One membership's events, and whose it is: `person_id` is our id for the person (the
    path's), `telegram_user_id` theirs in Telegram."""

    person_id: int
    telegram_user_id: int
    person: Who
    channel_id: int
    items: list[MembershipEvent]


class TelegramPerson(msgspec.Struct):
    """A Telegram user as a person here: `person_id` is what paths naming `person_id` take."""

    person_id: int
    telegram_user_id: int
    person: Who
    bot_ids: list[int]


AMOUNT = Column("amount_minor", Decimal, "numeric")


INVOICES = Listing(
    "invoices_list",
    key=(ID,),
    sorts=(ID, CREATED, Column("expires_at", dt.datetime), AMOUNT, Column("status", str)),
)


# The ad shop's coins, in six-digit base units (USDT micros, sun): not ISO currencies, so not
# in the table billing prices invoices by.
TRON_COINS = ("USDT", "TRX")


AccessKind = Literal[
    "grant", "reminder", "revoke", "expiry_notice", "checkout_declined", "checkout_lapsed"
]


class Priced(msgspec.Struct, kw_only=True):
    """An amount in minor units with its currency, and the same amount as text in major units
    with the currency's own digits ("12.50", "500" yen, "1.250" dinars) for people."""

    amount_minor: Minor
    currency: str
    amount: str = ""

    def __post_init__(self) -> None:
        self.amount = _major(self.amount_minor, self.currency)


def _major(minor: Minor, currency: str) -> str:
    if currency in TRON_COINS:
        return decimal_text(int(minor))
    return major_text(minor, currency)


class InvoiceQuery(Paged, kw_only=True):
    status: Literal["open", "paid", "expired", "cancelled"] | None = None
    sort: INVOICES.sort_values = "-id"  # type: ignore[name-defined]


class Invoice(Priced):
    id: int
    order_reference: str
    telegram_user_id: int
    person: Who
    channel_id: int
    gateway: str
    status: Literal["open", "paid", "expired", "cancelled"]
    created_at: dt.datetime
    expires_at: dt.datetime
    paid_at: dt.datetime | None


PAYMENTS = Listing(
    "payments_list",
    key=(ID,),
    sorts=(ID, Column("paid_at", dt.datetime), AMOUNT, Column("gateway", str), CREATED),
)


class PaymentExport(msgspec.Struct, kw_only=True):
    gateway: Word | None = None
    applied: bool | None = None
    flag: Word | None = None
    channel: Id | None = None
    q: Search | None = None
    sort: PAYMENTS.sort_values = "-id"  # type: ignore[name-defined]


class PaymentQuery(PaymentExport, kw_only=True):
    limit: Limit = 50
    cursor: Word | None = None


class Payment(Priced):
    id: int
    gateway: str
    external_payment_id: str
    order_reference: str
    telegram_user_id: int
    person: Who
    channel_id: int
    paid_at: dt.datetime
    applied: bool
    flag: str | None
    created_at: dt.datetime
    # Given back (a refund or a chargeback), and when: what it bought was taken back.
    refund: Literal["refund", "chargeback"] | None = None
    refunded_at: dt.datetime | None = None
    # The owner's refund of a Stars payment on its way through botedge, if asked for.
    refund_request: Literal["pending", "processing", "done", "failed"] | None = None


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


GATEWAY_EVENTS = Listing(
    "gateway_events_list",
    key=(ID,),
    sorts=(
        ID,
        Column("received_at", dt.datetime),
        Column("gateway", str),
        Column("outcome", str),
    ),
)


class GatewayEventQuery(Paged, kw_only=True):
    outcome: Attention | None = None
    sort: GATEWAY_EVENTS.sort_values = "-id"  # type: ignore[name-defined]


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
            self.paid = _major(self.paid_minor, self.paid_currency)
        if self.due_minor is not None and self.due_currency:
            self.due = _major(self.due_minor, self.due_currency)


AccessState = Literal["pending", "processing", "done", "failed"]


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
)


class AccessEventQuery(Paged, kw_only=True):
    state: AccessState | None = None
    sort: ACCESS_EVENTS.sort_values = "-id"  # type: ignore[name-defined]


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


class DayRevenue(Priced):
    day: dt.date


class DayMembers(msgspec.Struct):
    day: dt.date
    active: int
    grace: int


class Outage(msgspec.Struct):
    """A bot Telegram has been failing for since `since` (5xx, no answer): its replies wait."""

    bot_id: int
    username: str
    since: dt.datetime


class Dashboard(msgspec.Struct):
    """What needs the owner's eye, and the last 30 days' revenue by day of the workspace's time
    zone and by currency: applied payments, and the ad shop's credited payments in USDT and
    TRX."""

    time_zone: str
    members_active: int
    members_grace: int
    ad_orders_waiting: int
    access_events_failing: int
    dead_updates: int
    bots_with_problems: int
    revenue: list[DayRevenue]
    members: list[DayMembers]
    """Memberships active and in grace at the end of each of the same 30 days, oldest first."""
    outages: list[Outage] = []


_PERSON_COLUMNS: list[exports.Column] = [
    "telegram_user_id",
    *((part, exports.person(part)) for part in ("username", "first_name", "last_name")),
]


def _people_filters(where: PeopleExport) -> dict[str, Any]:
    return {"bot_id": where.bot, **person_search(where.q)}


def _membership_filters(where: MembershipExport) -> dict[str, Any]:
    return {"status": where.status, "channel_id": where.channel, **person_search(where.q)}


def _payment_filters(where: PaymentExport) -> dict[str, Any]:
    return {
        "gateway": where.gateway,
        "applied": where.applied,
        "flag": where.flag,
        "channel_id": where.channel,
        **person_search(where.q),
    }


class Ledger:
    def __init__(self, billing: Internal, clock: Clock) -> None:
        self.billing = billing
        self.clock = clock

    async def _listed(
        self,
        request: Request,
        listing: Listing,
        where: Sorted,
        filters: dict[str, Any],
        kind: type[R],
    ) -> Response:
        found = await listing.page(request, where, filters)
        return answer(converted(found, kind))

    async def dashboard(self, request: Request, caller: Caller) -> Response:
        async with store.connection(runtime(request).pool) as conn:
            counts = (await store.rows(conn, "dashboard_counts", {}))[0]
            revenue = await store.rows(conn, "revenue_by_day", {})
            members = await store.rows(conn, "members_by_day", {})
            outages = await store.rows(conn, "dashboard_outages", {})
        board = {**counts, "revenue": revenue, "members": members, "outages": outages}
        return answer(msgspec.convert(board, Dashboard))

    async def people(self, request: Request, caller: Caller) -> Response:
        where = query(request, PeopleQuery)
        return await self._listed(request, PEOPLE, where, _people_filters(where), Visitor)

    async def people_csv(self, request: Request, caller: Caller) -> Response:
        where = query(request, PeopleExport)
        columns = [
            "bot_id",
            "telegram_user_id",
            "username",
            "first_name",
            "last_name",
            "first_seen_at",
            "last_seen_at",
            "blocked",
        ]
        return self._csv(request, PEOPLE, where.sort, _people_filters(where), columns, "people")

    async def memberships(self, request: Request, caller: Caller) -> Response:
        where = query(request, MembershipQuery)
        filters = _membership_filters(where)
        return await self._listed(request, MEMBERSHIPS, where, filters, Membership)

    async def memberships_csv(self, request: Request, caller: Caller) -> Response:
        where = query(request, MembershipExport)
        columns = [
            *_PERSON_COLUMNS,
            "channel_id",
            "channel_title",
            "status",
            "expires_at",
            "grace_days",
            "updated_at",
            "stars_renewal",
            "stars_renews_at",
        ]
        filters = _membership_filters(where)
        return self._csv(request, MEMBERSHIPS, where.sort, filters, columns, "memberships")

    def _csv(
        self,
        request: Request,
        listing: Listing,
        sort: str,
        filters: dict[str, Any],
        columns: Iterable[exports.Column],
        name: str,
    ) -> Response:
        today = self.clock.now().date()
        return exports.download(request, listing, sort, filters, columns, name, today)

    async def history(self, request: Request, caller: Caller) -> Response:
        keys = {
            "person_id": int(request.path_params["person_id"]),
            "channel_id": int(request.path_params["channel_id"]),
        }
        if any(value >= _LOW for value in keys.values()):
            raise errors.NotFound("no such membership")
        async with store.connection(runtime(request).pool) as conn:
            events = await store.rows(conn, "membership_history", keys)
            whose = await store.rows(conn, "person_of", keys)
        if not events or not whose:
            raise errors.NotFound(
                "no such membership (the path takes our person_id, not a Telegram id: see"
                " /v1/people/by-telegram-id/{telegram_user_id})"
            )
        history = {**whose[0], "channel_id": keys["channel_id"], "items": events}
        return answer(msgspec.convert(history, History))

    async def person_by_telegram_id(self, request: Request, caller: Caller) -> Response:
        telegram_user_id = int(request.path_params["telegram_user_id"])
        if not 0 < telegram_user_id < 2**52:
            raise errors.NotFound("no person with that Telegram id")
        async with store.connection(runtime(request).pool) as conn:
            found = await store.rows(
                conn, "person_by_telegram_id", {"telegram_user_id": telegram_user_id}
            )
        if not found:
            raise errors.NotFound("no person with that Telegram id")
        return answer(msgspec.convert(found[0], TelegramPerson))

    async def invoices(self, request: Request, caller: Caller) -> Response:
        where = query(request, InvoiceQuery)
        return await self._listed(request, INVOICES, where, {"status": where.status}, Invoice)

    async def payments(self, request: Request, caller: Caller) -> Response:
        where = query(request, PaymentQuery)
        return await self._listed(request, PAYMENTS, where, _payment_filters(where), Payment)

    async def payments_csv(self, request: Request, caller: Caller) -> Response:
        where = query(request, PaymentExport)
        columns = [
            "id",
            "gateway",
            "external_payment_id",
            "order_reference",
            *_PERSON_COLUMNS,
            "channel_id",
            ("amount", lambda row: major_text(row["amount_minor"], row["currency"])),
            "currency",
            "paid_at",
            "applied",
            "flag",
            "created_at",
        ]
        filters = _payment_filters(where)
        return self._csv(request, PAYMENTS, where.sort, filters, columns, "payments")

    async def gateway_events(self, request: Request, caller: Caller) -> Response:
        where = query(request, GatewayEventQuery)
        filters = {"outcome": where.outcome}
        return await self._listed(request, GATEWAY_EVENTS, where, filters, GatewayEvent)

    async def access_events(self, request: Request, caller: Caller) -> Response:
        where = query(request, AccessEventQuery)
        filters = {"state": where.state}
        return await self._listed(request, ACCESS_EVENTS, where, filters, AccessEvent)

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
        if answer.status_code == 202:
            asked = answer.json()
            async with store.connection(runtime(request).pool) as conn:
                await audit(
                    conn,
                    caller,
                    self.clock,
                    "payments.refund",
                    f"payment:{payment_id}",
                    None,
                    {"request_id": asked["request_id"], "state": asked["state"]},
                )
        return relayed(answer)

    async def reconcile(self, request: Request, caller: Caller) -> Response:
        return relayed(await self.billing.ask("GET", "/internal/reconcile"))

    async def reconcile_fix(self, request: Request, caller: Caller) -> Response:
        answer = await self.billing.ask("POST", "/internal/reconcile/fix")
        if answer.status_code == 200:
            fixed = answer.json()["ledger"]["fixed"]
            async with store.connection(runtime(request).pool) as conn:
                await audit(
                    conn,
                    caller,
                    self.clock,
                    "reconcile.fix",
                    "ledger",
                    None,
                    {"fixed": [[d["person_id"], d["channel_id"]] for d in fixed]},
                )
        return relayed(answer)

    async def gateways(self, request: Request, caller: Caller) -> Response:
        return relayed(await self.billing.ask("GET", "/internal/gateways"))

    async def create_invoice(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewInvoice, limit=4096)
        answer = await self.billing.ask("POST", "/internal/invoices", msgspec.to_builtins(body))
        return relayed(answer)
