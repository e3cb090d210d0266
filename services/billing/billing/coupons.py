"""Coupons at invoice time: whether one applies, and what it takes off. Pure: the caller reads
the coupon under its row's lock and the person's uses and standing, and writes the result."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Literal

# Why a coupon does not apply, as the field code of docs/errors.md a refusal names.
Refusal = Literal["not-found", "out-of-range", "taken", "not-one-of", "invalid"]


@dataclass(frozen=True)
class Coupon:
    id: int
    percent_off: int | None
    amount_off_minor: int | None
    currency: str | None
    expires_at: dt.datetime | None
    max_redemptions: int | None
    per_person: int
    plan_ids: list[int] | None
    customers: str
    active: bool

    @classmethod
    def of(cls, row: dict[str, Any]) -> Coupon:
        return cls(**{f: row[f] for f in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Standing:
    """What the coupon's limits are checked against, read under its lock."""

    uses: int
    person_uses: int
    # The person's membership of the plan's channel: None when they never had one.
    membership_status: str | None


def refusal(
    coupon: Coupon | None, plan_id: int, currency: str, standing: Standing, now: dt.datetime
) -> tuple[Refusal, str] | None:
    """Why the coupon does not apply to this plan for this person now, or None when it does."""
    if coupon is None or not coupon.active:
        return "not-found", "no coupon by that code"
    if coupon.expires_at is not None and coupon.expires_at <= now:
        return "out-of-range", "the coupon has expired"
    if coupon.max_redemptions is not None and standing.uses >= coupon.max_redemptions:
        return "taken", "the coupon has been used up"
    if standing.person_uses >= coupon.per_person:
        return "taken", "the coupon has been used as often as one person may"
    if coupon.plan_ids is not None and plan_id not in coupon.plan_ids:
        return "not-one-of", "the coupon is not for this plan"
    if coupon.currency is not None and coupon.currency != currency:
        return "not-one-of", f"the coupon takes {coupon.currency} off, the plan costs {currency}"
    status = standing.membership_status
    allowed = {
        "any": True,
        "new": status is None,
        "lapsed": status == "expired",
        "new_or_lapsed": status in (None, "expired"),
    }[coupon.customers]
    if not allowed:
        return "invalid", "the coupon is for new or lapsed customers"
    return None


def discount(coupon: Coupon, price_minor: int) -> int:
    """What the coupon takes off the price, in minor units: a percentage rounded down, or the
    fixed amount; never so much that less than 1 minor unit (the gateways' least) is left."""
    if coupon.percent_off is not None:
        off = price_minor * coupon.percent_off // 100
    else:
        off = coupon.amount_off_minor or 0
    return max(0, min(off, price_minor - 1))
