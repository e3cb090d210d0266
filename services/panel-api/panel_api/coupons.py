"""Coupons for the owner's panel: a code that takes a percentage or a fixed amount off an
invoice, with an expiry, a total and a per-person number of uses, for some plans and some
customers; and who used each. billing redeems them when it makes an invoice
(`billing.invoices`); an invoice that expires unpaid gives its use back.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Annotated, Any, Literal

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
    Word,
    answer,
    audit,
    converted,
    given,
    path_id,
    query,
)
from panel_api.fields import Currency, Id, Price, price_minor
from shared.clock import Clock
from shared.currencies import major_text
from shared.db import Connection
from shared.errors import json_body
from shared.web import runtime

Q = store.Q

Code = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{3,32}$")]
Customers = Literal["any", "new", "lapsed", "new_or_lapsed"]
PlanIds = Annotated[list[Id], msgspec.Meta(min_length=1, max_length=100)]
Uses = Annotated[int, msgspec.Meta(ge=1, le=10**9)]
PerPerson = Annotated[int, msgspec.Meta(ge=1, le=100)]
Expiry = Annotated[dt.datetime, msgspec.Meta(tz=True)]


class NewCoupon(msgspec.Struct, forbid_unknown_fields=True):
    code: Code
    # One of the two: a percentage, or an amount in the currency's major units.
    percent_off: Annotated[int, msgspec.Meta(ge=1, le=100)] | None = None
    amount_off: Price | None = None
    currency: Currency | None = None
    expires_at: Expiry | None = None
    max_redemptions: Uses | None = None
    per_person: PerPerson = 1
    # None: every plan.
    plan_ids: PlanIds | None = None
    customers: Customers = "any"


class CouponChange(msgspec.Struct, forbid_unknown_fields=True):
    expires_at: Expiry | msgspec.UnsetType | None = msgspec.UNSET
    max_redemptions: Uses | msgspec.UnsetType | None = msgspec.UNSET
    per_person: PerPerson | msgspec.UnsetType = msgspec.UNSET
    plan_ids: PlanIds | msgspec.UnsetType | None = msgspec.UNSET
    customers: Customers | msgspec.UnsetType = msgspec.UNSET
    active: bool | msgspec.UnsetType = msgspec.UNSET


class Coupon(msgspec.Struct):
    id: int
    code: str
    percent_off: int | None
    amount_off_minor: int | None
    currency: str | None
    expires_at: dt.datetime | None
    max_redemptions: int | None
    per_person: int
    plan_ids: list[int] | None
    customers: str
    active: bool
    created_at: dt.datetime
    updated_at: dt.datetime | None
    # Uses not given back (invoices made with it, paid or still open), and of them paid.
    uses: int
    paid: int
    # The fixed amount as text in the currency's major units, for people.
    amount_off: str | None = None

    def __post_init__(self) -> None:
        if self.amount_off_minor is not None and self.currency is not None:
            self.amount_off = major_text(self.amount_off_minor, self.currency)


class Redemption(msgspec.Struct):
    id: int
    coupon_id: int
    telegram_user_id: int
    username: str | None
    first_name: str | None
    order_reference: str
    channel_title: str
    plan_name: str
    currency: str
    list_price_minor: int
    discount_minor: int
    amount_minor: int
    invoice_status: str
    redeemed_at: dt.datetime
    released_at: dt.datetime | None
    list_price: str = ""
    discount: str = ""
    amount: str = ""

    def __post_init__(self) -> None:
        self.list_price = major_text(self.list_price_minor, self.currency)
        self.discount = major_text(self.discount_minor, self.currency)
        self.amount = major_text(self.amount_minor, self.currency)


CouponsSort = Literal["id", "-id", "code", "-code", "uses", "-uses", "created_at", "-created_at"]
COUPONS = Listing(
    "coupons_list",
    key=(ID,),
    sorts=(ID, Column("code", str), Column("uses", int), CREATED),
    sort_type=CouponsSort,
)
RedemptionsSort = Literal["id", "-id", "redeemed_at", "-redeemed_at"]
REDEMPTIONS = Listing(
    "coupon_redemptions_list",
    key=(ID,),
    sorts=(ID, Column("redeemed_at", dt.datetime)),
    sort_type=RedemptionsSort,
)


class CouponQuery(Paged, kw_only=True):
    active: bool | None = None
    sort: CouponsSort = "-id"


class RedemptionExport(msgspec.Struct, kw_only=True):
    coupon: Id | None = None
    sort: RedemptionsSort = "-id"


class RedemptionQuery(RedemptionExport, kw_only=True):
    limit: Limit = 50
    cursor: Word | None = None


class Coupons:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def coupons(self, request: Request, caller: Caller) -> Response:
        where = query(request, CouponQuery)
        found = await COUPONS.page(request, where, {"id": None, "active": where.active})
        return answer(converted(found, Coupon))

    async def coupon(self, request: Request, caller: Caller) -> Response:
        coupon_id = path_id(request, "coupon_id", "coupon")
        async with store.connection(runtime(request).pool) as conn:
            return answer(await _one(conn, coupon_id))

    async def add_coupon(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewCoupon, limit=8192)
        now = self.clock.now()
        if body.expires_at is not None and body.expires_at <= now:
            raise errors.InvalidValue(
                "the expiry is in the past", field="expires_at", code="out-of-range"
            )
        plan_ids = _plan_ids(body.plan_ids)
        currency = body.currency if body.amount_off is not None else None
        params = {
            "code": body.code,
            "percent_off": body.percent_off,
            "amount_off_minor": _amount_off(body),
            "currency": currency,
            "expires_at": body.expires_at,
            "max_redemptions": body.max_redemptions,
            "per_person": body.per_person,
            "plan_ids": plan_ids,
            "customers": body.customers,
            "now": now,
        }
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            await _check_plans(conn, plan_ids, currency)
            inserted = await store.row(conn, "insert_coupon", params)
            if inserted is None:
                raise errors.InvalidValue(
                    "a coupon by that code exists already", field="code", code="taken"
                )
            made = await _one(conn, int(inserted["id"]))
            await audit(
                conn, caller, self.clock, "coupons.add", f"coupon:{made.id}", None, _audited(made)
            )
        return answer(made, status=201)

    async def change_coupon(self, request: Request, caller: Caller) -> Response:
        coupon_id = path_id(request, "coupon_id", "coupon")
        body = await json_body(request, CouponChange, limit=8192)
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            await conn.execute(Q["lock_coupon"], {"id": coupon_id})
            before = await _one(conn, coupon_id)
            values = given(body)
            if "plan_ids" in values:
                values["plan_ids"] = _plan_ids(values["plan_ids"])
                await _check_plans(conn, values["plan_ids"], before.currency)
            after = msgspec.structs.replace(before, **values)
            await conn.execute(
                Q["update_coupon"],
                {
                    "id": coupon_id,
                    "expires_at": after.expires_at,
                    "max_redemptions": after.max_redemptions,
                    "per_person": after.per_person,
                    "plan_ids": after.plan_ids,
                    "customers": after.customers,
                    "active": after.active,
                    "now": self.clock.now(),
                },
            )
            changed = await _one(conn, coupon_id)
            await audit(
                conn,
                caller,
                self.clock,
                "coupons.update",
                f"coupon:{coupon_id}",
                _audited(before),
                _audited(changed),
            )
        return answer(changed)

    async def redemptions(self, request: Request, caller: Caller) -> Response:
        where = query(request, RedemptionQuery)
        found = await REDEMPTIONS.page(request, where, {"coupon_id": where.coupon})
        return answer(converted(found, Redemption))

    async def redemptions_csv(self, request: Request, caller: Caller) -> Response:
        where = query(request, RedemptionExport)
        columns: list[exports.Column] = [
            "coupon_code",
            "telegram_user_id",
            "username",
            "first_name",
            "order_reference",
            "channel_title",
            "plan_name",
            "currency",
            ("list_price", _major("list_price_minor")),
            ("discount", _major("discount_minor")),
            ("amount", _major("amount_minor")),
            "invoice_status",
            "redeemed_at",
            "released_at",
        ]
        today = self.clock.now().date()
        params = {"coupon_id": where.coupon}
        return exports.download(
            request, REDEMPTIONS, where.sort, params, columns, "coupon-redemptions", today
        )


def _major(field: str) -> Callable[[dict[str, Any]], str]:
    """A row's amount in minor units as text in its currency's major units."""
    return lambda row: major_text(row[field], row["currency"])


def _amount_off(body: NewCoupon) -> int | None:
    """The fixed discount in minor units; exactly one kind of discount is given."""
    if (body.percent_off is None) == (body.amount_off is None):
        raise errors.InvalidValue(
            "give a percentage or an amount off, one of them",
            field="percent_off",
            code="required" if body.percent_off is None else "invalid",
        )
    if body.amount_off is None:
        return None
    if body.currency is None:
        raise errors.InvalidValue(
            "an amount off needs its currency", field="currency", code="required"
        )
    return price_minor(body.amount_off, body.currency, field="amount_off")


def _plan_ids(plan_ids: list[int] | None) -> list[int] | None:
    if plan_ids is not None and len(set(plan_ids)) != len(plan_ids):
        raise errors.InvalidValue("a plan is named twice", field="plan_ids", code="duplicate")
    return None if plan_ids is None else sorted(plan_ids)


async def _check_plans(conn: Connection, plan_ids: list[int] | None, currency: str | None) -> None:
    """Each plan exists; an amount off is in the currency of every plan it is for."""
    if plan_ids is None:
        return
    found = await store.rows(conn, "plans_by_id", {"ids": plan_ids})
    if len(found) != len(plan_ids):
        raise errors.InvalidValue("no plan by one of those ids", field="plan_ids", code="not-found")
    if currency is not None and any(plan["currency"] != currency for plan in found):
        raise errors.InvalidValue(
            f"an amount off in {currency} is for plans priced in {currency}",
            field="currency",
            code="not-one-of",
        )


async def _one(conn: Connection, coupon_id: int) -> Coupon:
    cur = await conn.execute(Q["coupons_list"], {"id": coupon_id, "active": None})
    row = await cur.fetchone()
    if row is None:
        raise errors.NotFound("no coupon by that id")
    return msgspec.convert(dict(row), Coupon)


def _audited(coupon: Coupon) -> dict[str, Any]:
    entry: dict[str, Any] = msgspec.to_builtins(coupon)
    for derived in ("uses", "paid", "amount_off", "created_at", "updated_at"):
        entry.pop(derived)
    return entry
