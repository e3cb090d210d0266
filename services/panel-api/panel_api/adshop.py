"""The ad shop for the owner's panel: slots the bots sell, and orders to approve and follow.

Approving, rejecting and cancelling an order are billing's (it owns orders' payment state): the
panel forwards them to billing's internal endpoints and relays the answers unchanged.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Annotated, Any, Literal

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
    converted,
    mapped,
    path_id,
    query,
    relay_audited,
)
from panel_api.fields import Id
from panel_api.internal import Internal
from shared.clock import Clock
from shared.db import Connection
from shared.errors import json_body
from shared.units import decimal_text
from shared.web import runtime

Q = store.Q
SlotKind = Literal["pinned_post", "broadcast", "button"]
OrderStatus = Literal[
    "requested", "approved", "part_paid", "paid", "rejected", "cancelled", "expired"
]
# USDT as a decimal string, at most 6 decimals: exact micros, never a float.
Price = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{1,9}(\.[0-9]{1,6})?$")]
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=120, pattern=r"^[^\x00-\x1f\x7f]+$")]


def micros(price: str) -> int:
    value = int(Decimal(price) * 1_000_000)
    if value <= 0:
        raise errors.InvalidValue("price must be above zero", field="price", code="out-of-range")
    return value


class NewSlot(msgspec.Struct, forbid_unknown_fields=True):
    bot_id: Id
    kind: SlotKind
    title: Title
    price: Price
    accepts_usdt: bool = True
    accepts_trx: bool = False


class SlotChange(msgspec.Struct, forbid_unknown_fields=True):
    title: Title | msgspec.UnsetType = msgspec.UNSET
    price: Price | msgspec.UnsetType = msgspec.UNSET
    accepts_usdt: bool | msgspec.UnsetType = msgspec.UNSET
    accepts_trx: bool | msgspec.UnsetType = msgspec.UNSET
    active: bool | msgspec.UnsetType = msgspec.UNSET


class Slot(msgspec.Struct):
    id: int
    bot_id: int
    kind: SlotKind
    title: str
    price: str
    price_micros: int
    accepts_usdt: bool
    accepts_trx: bool
    active: bool
    created_at: dt.datetime


PRICE = Column("price_micros", int)
SlotsSort = Literal[
    "id", "-id", "title", "-title", "price_micros", "-price_micros", "created_at", "-created_at"
]
SLOTS = Listing(
    "ad_slots_list",
    key=(ID,),
    sorts=(ID, Column("title", str), PRICE, CREATED),
    sort_type=SlotsSort,
)


class SlotQuery(Paged, kw_only=True):
    bot: Id | None = None
    sort: SlotsSort = "id"


OrdersSort = Literal[
    "id",
    "-id",
    "created_at",
    "-created_at",
    "price_micros",
    "-price_micros",
    "paid_micros",
    "-paid_micros",
    "status",
    "-status",
]
ORDERS = Listing(
    "ad_orders_list",
    key=(ID,),
    sorts=(ID, CREATED, PRICE, Column("paid_micros", int), Column("status", str)),
    sort_type=OrdersSort,
)


class OrderQuery(Paged, kw_only=True):
    status: OrderStatus | None = None
    bot: Id | None = None
    since: Annotated[dt.datetime, msgspec.Meta(tz=True)] | None = None
    until: Annotated[dt.datetime, msgspec.Meta(tz=True)] | None = None
    sort: OrdersSort = "-id"


class Order(msgspec.Struct):
    id: int
    slot_id: int
    bot_id: int
    telegram_user_id: int
    person: Who
    ad: dict[str, Any]
    price_micros: int
    accepts_usdt: bool
    accepts_trx: bool
    status: OrderStatus
    approved_at: dt.datetime | None
    pay_to: str | None
    trx_rate: str | None
    trx_rate_source: str | None
    paid_micros: int
    due_at: dt.datetime | None
    created_at: dt.datetime
    # The two amounts in USDT as text ("12.5"), for people; the micros for arithmetic.
    price: str = ""
    paid: str = ""

    def __post_init__(self) -> None:
        self.price = decimal_text(self.price_micros)
        self.paid = decimal_text(self.paid_micros)


class ClaimRow(msgspec.Struct):
    id: int
    tx_hash: str
    state: str
    reason: str | None
    submitted_at: dt.datetime
    not_found_seconds: float
    attempts: int


class CreditRow(msgspec.Struct):
    id: int
    claim_id: int
    coin: Literal["usdt", "trx"]
    amount: str
    micros: int
    sender: str
    block_time: dt.datetime


class EventRow(msgspec.Struct):
    id: int
    kind: str
    detail: dict[str, Any]
    state: str
    created_at: dt.datetime


class OrderDetail(msgspec.Struct):
    order: Order
    claims: list[ClaimRow]
    credits: list[CreditRow]
    events: list[EventRow]


class OrderStep(msgspec.Struct):
    """billing's answer to a step, relayed."""

    id: int
    status: OrderStatus
    price_micros: int
    paid_micros: int
    accepts_usdt: bool
    accepts_trx: bool
    approved_at: str | None
    pay_to: str | None
    trx_rate: str | None
    trx_rate_source: str | None
    due_at: str | None


def _slot(row: dict[str, Any]) -> Slot:
    return Slot(**{**row, "price": decimal_text(int(row["price_micros"]))})


class AdShop:
    def __init__(self, clock: Clock, billing: Internal) -> None:
        self.clock = clock
        self.billing = billing

    async def slots(self, request: Request, caller: Caller) -> Response:
        where = query(request, SlotQuery)
        found = await SLOTS.page(request, where, {"bot_id": where.bot})
        return answer(mapped(found, _slot))

    async def add_slot(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewSlot, limit=4096)
        if not (body.accepts_usdt or body.accepts_trx):
            raise errors.InvalidValue(
                "a slot takes USDT, TRX or both", field="accepts_usdt", code="required"
            )
        params = {**msgspec.to_builtins(body), "price_micros": micros(body.price)}
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            if await (await conn.execute(Q["bot_exists"], {"id": body.bot_id})).fetchone() is None:
                raise errors.InvalidValue(f"no bot {body.bot_id}", field="bot_id", code="not-found")
            row = await (await conn.execute(Q["insert_ad_slot"], params)).fetchone()
            slot = _slot(dict(row or {}))
            await self._audit(conn, caller, "ad_slots.add", f"ad_slot:{slot.id}", None, slot)
        return answer(slot, status=201)

    async def change_slot(self, request: Request, caller: Caller) -> Response:
        slot_id = path_id(request, "slot_id", "ad slot")
        body = await json_body(request, SlotChange, limit=4096)
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            cur = await conn.execute(Q["ad_slot_for_update"], {"id": slot_id})
            before = await cur.fetchone()
            if before is None:
                raise errors.NotFound("no ad slot by that id")
            changed = {
                key: getattr(body, key)
                for key in ("title", "accepts_usdt", "accepts_trx", "active")
                if not isinstance(getattr(body, key), msgspec.UnsetType)
            }
            if isinstance(body.price, str):
                changed["price_micros"] = micros(body.price)
            after = {**dict(before), **changed}
            if not (after["accepts_usdt"] or after["accepts_trx"]):
                raise errors.InvalidValue(
                    "a slot takes USDT, TRX or both", field="accepts_usdt", code="required"
                )
            row = await (await conn.execute(Q["update_ad_slot"], after)).fetchone()
            slot = _slot(dict(row or {}))
            await self._audit(
                conn, caller, "ad_slots.update", f"ad_slot:{slot_id}", _slot(dict(before)), slot
            )
        return answer(slot)

    async def orders(self, request: Request, caller: Caller) -> Response:
        where = query(request, OrderQuery)
        params = {
            "id": None,
            "status": where.status,
            "bot_id": where.bot,
            "since": where.since,
            "until": where.until,
        }
        found = await ORDERS.page(request, where, params)
        return answer(converted(found, Order))

    async def order(self, request: Request, caller: Caller) -> Response:
        order_id = path_id(request, "order_id", "ad order")
        async with store.connection(runtime(request).pool) as conn:
            found = await store.rows(
                conn,
                "ad_orders_list",
                {"id": order_id, "status": None, "bot_id": None, "since": None, "until": None},
            )
            if not found:
                raise errors.NotFound("no ad order by that id")
            detail = {
                "order": found[0],
                "claims": await store.rows(conn, "ad_order_claims", {"id": order_id}),
                "credits": await store.rows(conn, "ad_order_credits", {"id": order_id}),
                "events": await store.rows(conn, "ad_order_events_of", {"id": order_id}),
            }
        return answer(msgspec.convert(detail, OrderDetail))

    async def approve(self, request: Request, caller: Caller) -> Response:
        return await self._step(request, caller, "approve")

    async def reject(self, request: Request, caller: Caller) -> Response:
        return await self._step(request, caller, "reject")

    async def cancel(self, request: Request, caller: Caller) -> Response:
        return await self._step(request, caller, "cancel")

    async def _step(self, request: Request, caller: Caller, what: str) -> Response:
        order_id = path_id(request, "order_id", "ad order")
        done = await self.billing.ask("POST", f"/internal/ad-orders/{order_id}/{what}")
        return await relay_audited(
            request, caller, self.clock, done, 200, f"ad_orders.{what}", f"ad_order:{order_id}"
        )

    async def _audit(
        self, conn: Connection, caller: Caller, action: str, target: str, before: Any, after: Any
    ) -> None:
        await audit(conn, caller, self.clock, action, target, before, after)
