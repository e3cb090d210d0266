"""The demo month's plan: drawn from its seed alone, and inside the month it promises."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from simulators.demo_month import DAY, plan


def test_plan__the_same_seed_makes_the_same_month_and_another_seed_another() -> None:
    assert plan(7, 150) == plan(7, 150)
    assert plan(7, 150) != plan(8, 150)
    # The people are numbered in the order they are made: the names say it.
    assert [v.name.split()[-1] for v in plan(7, 150).visitors] == [str(n) for n in range(1, 151)]


@given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=1, max_value=60))
def test_plan__every_time_is_in_the_month_and_only_a_lapsed_buyer_before_it(
    seed: int, visitors: int
) -> None:
    month = plan(seed, visitors)
    assert len(month.visitors) == visitors
    for v in month.visitors:
        assert dt.timedelta(minutes=10) <= v.ago <= 40 * DAY
        if v.ago > 30 * DAY:
            assert v.gateway is not None
        assert not v.leaves or v.campaign is not None
        assert not v.declines or v.gateway in ("stripe", "wayforpay")
    outcomes = {a.outcome: a.ago for a in month.advertisers}
    assert set(outcomes) == {"requested", "rejected", "part_paid", "paid_usdt", "paid_trx"}
    # A part-paid order has 24 hours from its approval to be paid in full: not over yet.
    assert outcomes["part_paid"] < dt.timedelta(hours=24)
    assert all(b.ago < 30 * DAY for b in month.broadcasts)
