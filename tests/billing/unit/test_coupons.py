"""Coupons: what one takes off, and every reason it does not apply."""

from __future__ import annotations

import dataclasses
import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from billing.coupons import Coupon, Standing, discount, refusal

NOW = dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC)
TEN = Coupon(1, 10, None, None, None, None, 1, None, "any", True)
FRESH = Standing(0, 0, None)


@given(
    price=st.integers(1, 10**12),
    percent=st.integers(1, 100),
    amount=st.integers(1, 10**13),
)
def test_discount__never_below_one_minor_unit_and_never_above_the_price(
    price: int, percent: int, amount: int
) -> None:
    by_percent = discount(dataclasses.replace(TEN, percent_off=percent), price)
    fixed = Coupon(2, None, amount, "USD", None, None, 1, None, "any", True)
    for off in (by_percent, discount(fixed, price)):
        assert 0 <= off <= price - 1
    # A percentage is rounded down: the owner never gives more than it says.
    assert by_percent == min(price * percent // 100, price - 1)
    assert discount(fixed, price) == min(amount, price - 1)


def test_discount__a_hundred_percent_leaves_the_least_a_gateway_takes() -> None:
    assert discount(dataclasses.replace(TEN, percent_off=100), 500) == 499
    assert discount(dataclasses.replace(TEN, percent_off=100), 1) == 0


def test_refusal__each_reason_by_its_code() -> None:
    def why(coupon: Coupon | None, standing: Standing = FRESH, plan: int = 5) -> str | None:
        refused = refusal(coupon, plan, "USD", standing, NOW)
        return None if refused is None else refused[0]

    assert why(TEN) is None
    assert why(None) == "not-found"
    assert why(dataclasses.replace(TEN, active=False)) == "not-found"
    assert why(dataclasses.replace(TEN, expires_at=NOW)) == "out-of-range"
    assert why(dataclasses.replace(TEN, expires_at=NOW + dt.timedelta(seconds=1))) is None
    assert why(dataclasses.replace(TEN, max_redemptions=3), Standing(3, 0, None)) == "taken"
    assert why(dataclasses.replace(TEN, max_redemptions=3), Standing(2, 0, None)) is None
    assert why(TEN, Standing(1, 1, None)) == "taken"
    assert why(dataclasses.replace(TEN, per_person=2), Standing(1, 1, None)) is None
    assert why(dataclasses.replace(TEN, plan_ids=[4, 6])) == "not-one-of"
    assert why(dataclasses.replace(TEN, plan_ids=[4, 5])) is None
    euro = Coupon(2, None, 100, "EUR", None, None, 1, None, "any", True)
    assert why(euro) == "not-one-of"
    for customers, status, code in (
        ("new", None, None),
        ("new", "expired", "invalid"),
        ("lapsed", None, "invalid"),
        ("lapsed", "expired", None),
        ("lapsed", "grace", "invalid"),
        ("new_or_lapsed", "active", "invalid"),
        ("new_or_lapsed", "expired", None),
        ("any", "active", None),
    ):
        coupon = dataclasses.replace(TEN, customers=customers)
        assert why(coupon, Standing(0, 0, status)) == code, (customers, status)
