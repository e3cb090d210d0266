"""A paid channel's plans for the owner's panel: what the bot offers for the channel (a month, a
quarter, a year), each with its name, price, the gateways it is sold through, its place in the
bot's list, and on sale or not. One plan per channel is its default: what an invoice without a
plan is priced from, and what the channel page's price edits (`gate.py`).

Invoices copy a plan's price and period when they are made: a change applies to later ones.
"""

from __future__ import annotations

import datetime as dt
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
    answer,
    audit,
    converted,
    given,
    path_id,
    query,
)
from panel_api.fields import Currency, GraceDays, Id, PeriodDays, Price, price_minor
from shared.clock import Clock
from shared.currencies import major_text, minor_units
from shared.db import Connection
from shared.errors import json_body
from shared.web import runtime

Q = store.Q

PlanName = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[^\x00-\x1f\x7f]+$")]
# A gateway as billing names it; one that is not on is kept and offered once it is.
GatewayName = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_]{0,31}$")]
Gateways = Annotated[list[GatewayName], msgspec.Meta(min_length=1, max_length=16)]
Position = Annotated[int, msgspec.Meta(ge=0, le=999)]
# A bundle's channels, its own among them (added when left out).
BundleChannels = Annotated[list[Id], msgspec.Meta(min_length=1, max_length=50)]


class NewPlan(msgspec.Struct, forbid_unknown_fields=True):
    channel_id: Id
    name: PlanName
    # A trial is free (no price, no gateways) and taken once per person; a bundle covers
    # several paid channels of its currency (`channels`), and one payment opens each.
    kind: Literal["regular", "trial", "bundle"] = "regular"
    # In the currency's major units, as a person types it; required unless a trial.
    price: Price | None = None
    # Required unless a trial, which takes the default plan's.
    currency: Currency | None = None
    period_days: PeriodDays = 30
    grace_days: GraceDays = 3
    # None: every gateway billing has on.
    gateways: Gateways | None = None
    position: Position = 0
    # A bundle's channels; only a bundle takes them.
    channels: BundleChannels | None = None


class PlanChange(msgspec.Struct, forbid_unknown_fields=True):
    name: PlanName | msgspec.UnsetType = msgspec.UNSET
    price: Price | msgspec.UnsetType = msgspec.UNSET
    currency: Currency | msgspec.UnsetType = msgspec.UNSET
    period_days: PeriodDays | msgspec.UnsetType = msgspec.UNSET
    grace_days: GraceDays | msgspec.UnsetType = msgspec.UNSET
    gateways: Gateways | msgspec.UnsetType | None = msgspec.UNSET
    position: Position | msgspec.UnsetType = msgspec.UNSET
    active: bool | msgspec.UnsetType = msgspec.UNSET
    # Only true: the channel's default moves here (the old default stays on sale).
    is_default: Literal[True] | msgspec.UnsetType = msgspec.UNSET
    # A bundle's channels; later invoices cover these.
    channels: BundleChannels | msgspec.UnsetType = msgspec.UNSET


class Plan(msgspec.Struct):
    id: int
    channel_id: int
    channel_title: str
    name: str
    kind: str
    price_minor: int
    currency: str
    period_days: int
    grace_days: int
    gateways: list[str] | None
    position: int
    active: bool
    is_default: bool
    created_at: dt.datetime
    updated_at: dt.datetime | None
    # For a trial, the people who took it.
    taken: int = 0
    # For a bundle, the channels it covers (ascending) and their titles.
    channels: list[int] = []
    channel_titles: list[str] = []
    # The price as text in the currency's major units, for people.
    price: str = ""

    def __post_init__(self) -> None:
        self.price = major_text(self.price_minor, self.currency)


PlansSort = Literal[
    "id", "-id", "position", "-position", "name", "-name", "created_at", "-created_at"
]
PLANS = Listing(
    "plans_list",
    key=(ID,),
    sorts=(ID, Column("position", int), Column("name", str), CREATED),
    sort_type=PlansSort,
)


class PlanQuery(Paged, kw_only=True):
    channel: Id | None = None
    active: bool | None = None
    sort: PlansSort = "position"


class Plans:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def plans(self, request: Request, caller: Caller) -> Response:
        where = query(request, PlanQuery)
        found = await PLANS.page(
            request, where, {"id": None, "channel_id": where.channel, "active": where.active}
        )
        return answer(converted(found, Plan))

    async def plan(self, request: Request, caller: Caller) -> Response:
        plan_id = path_id(request, "plan_id", "plan")
        async with store.connection(runtime(request).pool) as conn:
            return answer(await _one(conn, plan_id))

    async def add_plan(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewPlan, limit=4096)
        name = _name(body.name)
        trial = body.kind == "trial"
        if trial:
            _free(body.price, body.currency, body.gateways)
        elif body.price is None or body.currency is None:
            field = "price" if body.price is None else "currency"
            raise errors.InvalidValue(f"a plan needs a {field}", field=field, code="required")
        covers = _covers(body.kind, body.channel_id, body.channels)
        params = {
            "channel_id": body.channel_id,
            "name": name,
            "kind": body.kind,
            "price_minor": 0
            if body.price is None
            else price_minor(body.price, body.currency or ""),
            "currency": body.currency,
            "period_days": body.period_days,
            "grace_days": body.grace_days,
            "gateways": _gateways(body.gateways),
            "position": body.position,
            "now": self.clock.now(),
        }
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            await _lock_channel(conn, body.channel_id)
            await _check_name(conn, body.channel_id, name, None)
            if trial:
                await _check_one_trial(conn, body.channel_id, None)
            if covers:
                await _check_bundle(conn, covers, str(body.currency))
            inserted = await store.row(conn, "insert_plan", params)
            if inserted is None:
                raise errors.StoreError("the new plan was not written")
            if covers:
                await conn.execute(Q["set_plan_channels"], {"id": inserted["id"], "ids": covers})
            made = await _one(conn, int(inserted["id"]))
            await audit(
                conn, caller, self.clock, "plans.add", f"plan:{made.id}", None, _audited(made)
            )
        return answer(made, status=201)

    async def change_plan(self, request: Request, caller: Caller) -> Response:
        plan_id = path_id(request, "plan_id", "plan")
        body = await json_body(request, PlanChange, limit=4096)
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            if await store.row(conn, "lock_channel_of_plan", {"id": plan_id}) is None:
                raise errors.NotFound("no plan by that id")
            before = await _one(conn, plan_id)
            after = _changed(before, body)
            renamed = after.name.lower() != before.name.lower()
            if after.active and (renamed or not before.active):
                await _check_name(conn, before.channel_id, after.name, plan_id)
            if after.kind == "trial" and after.active and not before.active:
                await _check_one_trial(conn, before.channel_id, plan_id)
            if after.kind == "bundle" and after.active and after != before:
                await _check_bundle(conn, after.channels, after.currency)
                await conn.execute(Q["set_plan_channels"], {"id": plan_id, "ids": after.channels})
            if before.is_default and not after.active:
                raise errors.Conflict(
                    "the default plan stays on sale: make another plan the default first"
                )
            if after.is_default and not before.is_default:
                if not after.active:
                    raise errors.InvalidValue(
                        "a plan off sale cannot be the default", field="is_default", code="invalid"
                    )
                await conn.execute(
                    Q["clear_default_plan"],
                    {"channel_id": before.channel_id, "now": self.clock.now()},
                )
            await conn.execute(
                Q["update_plan"],
                {
                    "id": plan_id,
                    "name": after.name,
                    "price_minor": after.price_minor,
                    "currency": after.currency,
                    "period_days": after.period_days,
                    "grace_days": after.grace_days,
                    "gateways": after.gateways,
                    "position": after.position,
                    "active": after.active,
                    "is_default": after.is_default,
                    "now": self.clock.now(),
                },
            )
            changed = await _one(conn, plan_id)
            await audit(
                conn,
                caller,
                self.clock,
                "plans.update",
                f"plan:{plan_id}",
                _audited(before),
                _audited(changed),
            )
        return answer(changed)


def _name(name: str) -> str:
    name = name.strip()
    if not name:
        raise errors.InvalidValue("a plan needs a name", field="name", code="required")
    return name


def _gateways(gateways: list[str] | None) -> list[str] | None:
    if gateways is not None and len(set(gateways)) != len(gateways):
        raise errors.InvalidValue("a gateway is named twice", field="gateways", code="duplicate")
    return None if gateways is None else sorted(gateways)


def _covers(kind: str, channel_id: int, channels: list[int] | None) -> list[int]:
    """A new plan's bundle channels, its own added, in ascending order; [] for another kind.
    A bundle of fewer than two, or channels to a plan that is no bundle, are refused."""
    if kind != "bundle":
        if channels is not None:
            raise errors.InvalidValue(
                "only a bundle covers other channels", field="channels", code="invalid"
            )
        return []
    if channels is None:
        raise errors.InvalidValue("a bundle needs its channels", field="channels", code="required")
    return _bundle_ids([channel_id, *channels])


def _bundle_ids(channels: list[int]) -> list[int]:
    if len(set(channels)) < 2:
        raise errors.InvalidValue(
            "a bundle covers at least two channels", field="channels", code="too-short"
        )
    return sorted(set(channels))


async def _check_bundle(conn: Connection, channels: list[int], currency: str) -> None:
    """Every channel of a bundle exists, is paid, and sells in the bundle's currency."""
    cur = await conn.execute(Q["bundle_candidates"], {"ids": channels})
    found = {int(row["id"]): row for row in await cur.fetchall()}
    for channel in channels:
        row = found.get(channel)
        if row is None:
            raise errors.InvalidValue(f"no channel {channel}", field="channels", code="not-found")
        if not row["is_paid"]:
            raise errors.InvalidValue(
                f"channel {channel} is not a paid channel", field="channels", code="invalid"
            )
        if row["currency"] is not None and row["currency"] != currency:
            raise errors.InvalidValue(
                f"channel {channel} sells in {row['currency']}, the bundle in {currency}",
                field="channels",
                code="mixed-currency",
            )


def _free(price: str | None, currency: str | None, gateways: list[str] | None) -> None:
    """A trial is priced at nothing and paid through no gateway: saying otherwise is refused
    at the field."""
    if price is not None and minor_units(price, currency or "USD") != 0:
        raise errors.InvalidValue("a free trial has no price", field="price", code="invalid")
    if gateways is not None:
        raise errors.InvalidValue(
            "a free trial is not paid through a gateway", field="gateways", code="invalid"
        )


def _changed(plan: Plan, change: PlanChange) -> Plan:
    """The plan as the change leaves it, every field checked."""
    values = given(change)
    if plan.kind == "trial":
        _free(values.pop("price", None), None, values.get("gateways"))
        if values.pop("is_default", False):
            raise errors.InvalidValue(
                "a free trial cannot be the default", field="is_default", code="invalid"
            )
    if plan.kind == "bundle":
        if values.pop("is_default", False):
            raise errors.InvalidValue(
                "a bundle cannot be the default", field="is_default", code="invalid"
            )
        if "channels" in values:
            values["channels"] = _bundle_ids([plan.channel_id, *values["channels"]])
    elif "channels" in values:
        raise errors.InvalidValue(
            "only a bundle covers other channels", field="channels", code="invalid"
        )
    if "name" in values:
        values["name"] = _name(values["name"])
    if "gateways" in values:
        values["gateways"] = _gateways(values["gateways"])
    if "price" in values or "currency" in values:
        currency = values.get("currency", plan.currency)
        price = values.pop("price", plan.price)
        values["price_minor"] = price_minor(price, currency)
    return msgspec.structs.replace(plan, **values)


async def _lock_channel(conn: Connection, channel_id: int) -> None:
    """Plans of one channel change one at a time (the name on sale and the default are per
    channel); a channel that does not exist is named at its field."""
    cur = await conn.execute(Q["lock_channel_plans"], {"channel_id": channel_id})
    if await cur.fetchone() is None:
        raise errors.InvalidValue("no channel by that id", field="channel_id", code="not-found")


async def _check_one_trial(conn: Connection, channel_id: int, plan_id: int | None) -> None:
    cur = await conn.execute(Q["trial_on_sale"], {"channel_id": channel_id, "id": plan_id})
    if await cur.fetchone() is not None:
        raise errors.InvalidValue(
            "the channel has a free trial on sale already", field="kind", code="taken"
        )


async def _check_name(conn: Connection, channel_id: int, name: str, plan_id: int | None) -> None:
    cur = await conn.execute(
        Q["plan_name_on_sale"], {"channel_id": channel_id, "name": name, "id": plan_id}
    )
    if await cur.fetchone() is not None:
        raise errors.InvalidValue(
            "the channel already sells a plan by that name", field="name", code="taken"
        )


async def _one(conn: Connection, plan_id: int) -> Plan:
    cur = await conn.execute(Q["plans_list"], {"id": plan_id, "channel_id": None, "active": None})
    row = await cur.fetchone()
    if row is None:
        raise errors.NotFound("no plan by that id")
    return msgspec.convert(dict(row), Plan)


def _audited(plan: Plan) -> dict[str, Any]:
    entry: dict[str, Any] = msgspec.to_builtins(plan)
    for derived in (
        "channel_title",
        "channel_titles",
        "price",
        "created_at",
        "updated_at",
        "taken",
    ):
        entry.pop(derived)
    return entry
