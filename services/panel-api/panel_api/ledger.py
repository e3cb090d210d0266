"""What billing and botedge keep about people and money, read for the owner: each bot's
visitors, memberships and their history, invoices, payments, and the gateway deliveries that
need a look. Creating an invoice is billing's to do: the panel asks billing and relays."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal
from typing import Any, Literal, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

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
    Who,
    Word,
    answer,
    person_search,
    query,
)
from panel_api.fields import ID_LIMIT, Id, MembershipStatus, Priced
from panel_api.internal import Internal
from shared.clock import Clock
from shared.currencies import major_text
from shared.web import runtime

R = TypeVar("R")


BOT = Column("bot_id", int)
PeopleSort = Literal[
    "bot_id",
    "-bot_id",
    "first_seen_at",
    "-first_seen_at",
    "last_seen_at",
    "-last_seen_at",
    "telegram_user_id",
    "-telegram_user_id",
]
PEOPLE = Listing(
    "people_list",
    key=(BOT, Column("person_id", int)),
    sorts=(
        BOT,
        Column("first_seen_at", dt.datetime),
        Column("last_seen_at", dt.datetime),
        Column("telegram_user_id", int),
    ),
    sort_type=PeopleSort,
)


class PeopleExport(msgspec.Struct, kw_only=True):
    bot: Id | None = None
    q: Search | None = None
    sort: PeopleSort = "bot_id"


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
MembershipsSort = Literal[
    "person_id",
    "-person_id",
    "status",
    "-status",
    "expires_at",
    "-expires_at",
    "updated_at",
    "-updated_at",
]
MEMBERSHIPS = Listing(
    "memberships_list",
    key=(PERSON, Column("channel_id", int)),
    sorts=(
        PERSON,
        Column("status", str),
        Column("expires_at", dt.datetime),
        Column("updated_at", dt.datetime),
    ),
    sort_type=MembershipsSort,
)


class MembershipExport(msgspec.Struct, kw_only=True):
    status: MembershipStatus | None = None
    channel: Id | None = None
    # Our id for one person (a membership's `person_id`): theirs only.
    person: Id | None = None
    q: Search | None = None
    sort: MembershipsSort = "person_id"


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
    cause: Literal["payment", "sweep", "grant", "trial", "refund", "reconcile", "removal"]
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


InvoicesSort = Literal[
    "id",
    "-id",
    "created_at",
    "-created_at",
    "expires_at",
    "-expires_at",
    "amount_minor",
    "-amount_minor",
    "status",
    "-status",
]
INVOICES = Listing(
    "invoices_list",
    key=(ID,),
    sorts=(ID, CREATED, Column("expires_at", dt.datetime), AMOUNT, Column("status", str)),
    sort_type=InvoicesSort,
)


class InvoiceQuery(Paged, kw_only=True):
    status: Literal["open", "paid", "expired", "cancelled"] | None = None
    sort: InvoicesSort = "-id"


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


PaymentsSort = Literal[
    "id",
    "-id",
    "paid_at",
    "-paid_at",
    "amount_minor",
    "-amount_minor",
    "gateway",
    "-gateway",
    "created_at",
    "-created_at",
]
PAYMENTS = Listing(
    "payments_list",
    key=(ID,),
    sorts=(ID, Column("paid_at", dt.datetime), AMOUNT, Column("gateway", str), CREATED),
    sort_type=PaymentsSort,
)


class PaymentExport(msgspec.Struct, kw_only=True):
    gateway: Word | None = None
    applied: bool | None = None
    flag: Word | None = None
    channel: Id | None = None
    # Our id for one person: theirs only.
    person: Id | None = None
    q: Search | None = None
    sort: PaymentsSort = "-id"


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


class Attention(msgspec.Struct):
    """What needs the owner, by the page that lists it."""

    ad_orders_waiting: int
    access_events_failing: int
    dead_updates: int
    bots_with_problems: int


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
    # The 30 days' revenue per currency, summed by the database.
    revenue_totals: list[Priced]
    members: list[DayMembers]
    """Memberships active and in grace at the end of each of the same 30 days, oldest first."""
    outages: list[Outage] = []


Period = Literal["7", "30", "90", "month"]


class HeadlineQuery(msgspec.Struct, forbid_unknown_fields=True):
    # The last 7, 30 or 90 days of the workspace's zone (today included), or this month.
    period: Period = "30"


class Change(msgspec.Struct):
    """A figure for the period, and for the period of the same length before it."""

    now: int
    before: int


class ChannelRevenue(Priced, kw_only=True):
    channel_id: int
    title: str
    payments: int


class PlanRevenue(Priced, kw_only=True):
    plan_id: int
    name: str
    channel_title: str
    payments: int


class StarsReceived(msgspec.Struct):
    subscriptions: Change
    one_off: Change


class Headlines(msgspec.Struct):
    """How the business is doing over a period, each figure beside the one before it."""

    period: Period
    time_zone: str
    since: dt.datetime
    until: dt.datetime
    # Where the period before it starts: it ends at `since`, and is as long.
    before: dt.datetime
    # Memberships active now, and at the period's start.
    active: Change
    # Memberships begun in the period (their first event).
    new: Change
    # Memberships that ran out in the period (moved to expired).
    lost: Change
    # Active memberships whose paid time ends in the next 7 days.
    renewals_due: int
    # Trials whose time ended in the period, and of those the ones paid for since.
    trials_ended: Change
    trials_paid: Change
    # Payments received in the period, and in the one before, per currency.
    received: list[Priced]
    received_before: list[Priced]
    # What the active memberships bring in a month, per currency, now and at the period's start.
    recurring: list[Priced]
    recurring_before: list[Priced]
    # Telegram Stars received (also counted in `received` as XTR), apart: subscriptions that
    # Telegram charges again by itself, and one-off payments.
    stars: StarsReceived
    # The period's payments by channel and by plan, per currency, the most first.
    by_channel: list[ChannelRevenue]
    by_plan: list[PlanRevenue]


def period_bounds(period: Period, zone: str, now: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """Where the period starts (midnight in the workspace's zone) and where the one before it
    starts."""
    try:
        tz: dt.tzinfo = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        tz = dt.UTC
    today = now.astimezone(tz).date()
    first = today.replace(day=1) if period == "month" else today - dt.timedelta(int(period) - 1)
    since = dt.datetime.combine(first, dt.time(), tz)
    return since, since - (now - since)


_PERSON_COLUMNS: list[exports.Column] = [
    "telegram_user_id",
    *((part, exports.person(part)) for part in ("username", "first_name", "last_name")),
]


def _people_filters(where: PeopleExport) -> dict[str, Any]:
    return {"bot_id": where.bot, **person_search(where.q)}


def _membership_filters(where: MembershipExport) -> dict[str, Any]:
    return {
        "status": where.status,
        "channel_id": where.channel,
        "person_id": where.person,
        **person_search(where.q),
    }


def _payment_filters(where: PaymentExport) -> dict[str, Any]:
    return {
        "gateway": where.gateway,
        "applied": where.applied,
        "flag": where.flag,
        "channel_id": where.channel,
        "person_id": where.person,
        **person_search(where.q),
    }


class Ledger:
    def __init__(self, billing: Internal, clock: Clock) -> None:
        self.billing = billing
        self.clock = clock

    async def dashboard(self, request: Request, caller: Caller) -> Response:
        async with store.connection(runtime(request).pool) as conn:
            counts = (await store.rows(conn, "dashboard_counts", {}))[0]
            counts |= (await store.rows(conn, "attention_counts", {}))[0]
            revenue = await store.rows(conn, "revenue_by_day", {})
            totals = await store.rows(conn, "revenue_totals", {})
            members = await store.rows(conn, "members_by_day", {})
            outages = await store.rows(conn, "dashboard_outages", {})
        board = {
            **counts,
            "revenue": revenue,
            "revenue_totals": totals,
            "members": members,
            "outages": outages,
        }
        return answer(msgspec.convert(board, Dashboard))

    async def headlines(self, request: Request, caller: Caller) -> Response:
        where = query(request, HeadlineQuery)
        now = self.clock.now()
        async with store.connection(runtime(request).pool) as conn:
            zone = str((await store.rows(conn, "workspace", {}))[0]["time_zone"])
            since, before = period_bounds(where.period, zone, now)
            bounds = {"since": since, "before": before, "until": now}
            counts = (await store.rows(conn, "headline_counts", bounds))[0]
            received = await store.rows(conn, "headline_received", bounds)
            recurring = await store.rows(conn, "headline_recurring", bounds)
            stars = (await store.rows(conn, "headline_stars", bounds))[0]
            by_channel = await store.rows(conn, "headline_by_channel", bounds)
            by_plan = await store.rows(conn, "headline_by_plan", bounds)

        def change(name: str, figures: dict[str, Any] = counts) -> Change:
            return Change(int(figures[f"{name}_now"]), int(figures[f"{name}_before"]))

        def priced(rows: list[dict[str, Any]], column: str) -> list[Priced]:
            return [Priced(amount_minor=r[column], currency=r["currency"]) for r in rows]

        return answer(
            Headlines(
                period=where.period,
                time_zone=zone,
                since=since,
                until=now,
                before=before,
                active=change("active"),
                new=change("new"),
                lost=change("lost"),
                renewals_due=int(counts["renewals_due"]),
                trials_ended=change("trials_ended"),
                trials_paid=change("trials_paid"),
                received=priced(received, "now_minor"),
                received_before=priced(received, "before_minor"),
                recurring=priced(recurring, "amount_minor"),
                recurring_before=priced(recurring, "before_minor"),
                stars=StarsReceived(change("subscriptions", stars), change("one_off", stars)),
                by_channel=msgspec.convert(by_channel, list[ChannelRevenue]),
                by_plan=msgspec.convert(by_plan, list[PlanRevenue]),
            )
        )

    async def attention(self, request: Request, caller: Caller) -> Response:
        async with store.connection(runtime(request).pool) as conn:
            counts = (await store.rows(conn, "attention_counts", {}))[0]
        return answer(msgspec.convert(counts, Attention))

    async def people(self, request: Request, caller: Caller) -> Response:
        where = query(request, PeopleQuery)
        return await PEOPLE.answered(request, where, _people_filters(where), Visitor)

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
        return await MEMBERSHIPS.answered(request, where, filters, Membership)

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
        if any(value >= ID_LIMIT for value in keys.values()):
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
        return await INVOICES.answered(request, where, {"status": where.status}, Invoice)

    async def payments(self, request: Request, caller: Caller) -> Response:
        where = query(request, PaymentQuery)
        return await PAYMENTS.answered(request, where, _payment_filters(where), Payment)

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
