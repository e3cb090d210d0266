"""The pure membership transition: properties checked with hypothesis."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from billing.transitions import (
    VOID,
    Extension,
    Grant,
    Removal,
    Status,
    after_refund,
    decide_due,
    due_notice,
    ended,
    extend,
    next_check_at,
    next_status,
    notice_key,
    reconciled,
    replay,
)

UTC = dt.UTC
RANK = {Status.ACTIVE: 0, Status.GRACE: 1, Status.EXPIRED: 2}

moments = st.datetimes(
    min_value=dt.datetime(2020, 1, 1), max_value=dt.datetime(2040, 1, 1), timezones=st.just(UTC)
)
statuses = st.sampled_from(list(Status))
graces = st.integers(min_value=0, max_value=60)


def oracle(status: Status, expires_at: dt.datetime, now: dt.datetime, grace: int) -> Status:
    """Brute force: walk the statuses and keep the last one the clock has reached."""
    reached = Status.ACTIVE
    if now > expires_at:
        reached = Status.GRACE
    if now > expires_at + dt.timedelta(days=grace):
        reached = Status.EXPIRED
    return max(status, reached, key=RANK.__getitem__)


@given(statuses, moments, moments, graces)
def test_next_status__never_moves_backward(
    status: Status, expires_at: dt.datetime, now: dt.datetime, grace: int
) -> None:
    assert RANK[next_status(status, expires_at, now, grace)] >= RANK[status]


@given(statuses, moments, moments, graces)
def test_next_status__idempotent(
    status: Status, expires_at: dt.datetime, now: dt.datetime, grace: int
) -> None:
    once = next_status(status, expires_at, now, grace)
    assert next_status(once, expires_at, now, grace) == once


@given(statuses, moments, moments, graces)
def test_next_status__matches_the_oracle(
    status: Status, expires_at: dt.datetime, now: dt.datetime, grace: int
) -> None:
    assert next_status(status, expires_at, now, grace) == oracle(status, expires_at, now, grace)


@given(statuses, moments, moments, graces)
def test_next_status__depends_only_on_its_arguments(
    status: Status, expires_at: dt.datetime, now: dt.datetime, grace: int
) -> None:
    results = {next_status(status.value, expires_at, now, grace) for _ in range(3)}
    # Same instant written in another zone: same answer.
    shifted = now.astimezone(dt.timezone(dt.timedelta(hours=5)))
    results.add(next_status(status, expires_at, shifted, grace))
    assert len(results) == 1


@given(statuses, moments, moments, graces, st.integers(min_value=0, max_value=400))
def test_next_status__monotone_in_time(
    status: Status, expires_at: dt.datetime, now: dt.datetime, grace: int, later_days: int
) -> None:
    later = now + dt.timedelta(days=later_days)
    assert (
        RANK[next_status(status, expires_at, later, grace)]
        >= RANK[next_status(status, expires_at, now, grace)]
    )


def test_next_status__edges() -> None:
    t = dt.datetime(2026, 1, 1, tzinfo=UTC)
    second = dt.timedelta(seconds=1)
    assert next_status("active", t, t, 3) is Status.ACTIVE
    assert next_status("active", t, t + second, 3) is Status.GRACE
    assert next_status("active", t, t + dt.timedelta(days=3), 3) is Status.GRACE
    assert next_status("active", t, t + dt.timedelta(days=3) + second, 3) is Status.EXPIRED
    # Zero grace goes straight to expired.
    assert next_status("active", t, t + second, 0) is Status.EXPIRED
    # Expired is terminal for the sweep.
    assert next_status("expired", t, t - dt.timedelta(days=9), 3) is Status.EXPIRED


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("active", dt.datetime(2026, 1, 1), dt.datetime.now(UTC), 1), "expires_at"),
        (("active", dt.datetime.now(UTC), dt.datetime(2026, 1, 1), 1), "now"),
        (("paused", dt.datetime.now(UTC), dt.datetime.now(UTC), 1), "unknown"),
        (("active", dt.datetime.now(UTC), dt.datetime.now(UTC), -1), "grace_days"),
        (("active", dt.datetime.now(UTC), dt.datetime.now(UTC), True), "grace_days"),
    ],
)
def test_next_status__rejects_bad_arguments(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        next_status(*args)  # type: ignore[arg-type]


@given(st.one_of(st.none(), moments), moments, st.integers(min_value=1, max_value=400))
def test_extend__from_the_later_of_expiry_and_payment(
    expires_at: dt.datetime | None, paid_at: dt.datetime, period: int
) -> None:
    result = extend(expires_at, paid_at, period)
    start = paid_at if expires_at is None else max(expires_at, paid_at)
    assert result == start + dt.timedelta(days=period)
    assert result > paid_at


@given(moments, st.lists(st.tuples(moments, st.integers(1, 90)), min_size=1, max_size=8))
def test_replay__equals_applying_one_by_one(
    start: dt.datetime, payments: list[tuple[dt.datetime, int]]
) -> None:
    expected: dt.datetime | None = start
    for paid_at, period in payments:
        expected = extend(expected, paid_at, period)
    assert replay([Extension(p, d) for p, d in payments], start) == expected


def test_replay__same_paid_at_stacks_periods() -> None:
    t = dt.datetime(2026, 5, 1, tzinfo=UTC)
    old = t - dt.timedelta(days=40)
    assert replay([Extension(t, 30)] * 5, old) == t + dt.timedelta(days=150)


def test_next_check_at__per_status() -> None:
    t = dt.datetime(2026, 5, 1, tzinfo=UTC)
    assert next_check_at(Status.ACTIVE, t, 3) == t
    assert next_check_at(Status.GRACE, t, 3) == t + dt.timedelta(days=3)
    assert next_check_at(Status.EXPIRED, t, 3) is None


H = dt.timedelta(hours=1)
reminders = st.lists(st.integers(min_value=1, max_value=8760), max_size=10, unique=True)


def test_next_check_at__active_is_due_at_each_reminder_still_ahead() -> None:
    t = dt.datetime(2026, 5, 10, tzinfo=UTC)
    assert next_check_at(Status.ACTIVE, t, 3, (72, 24)) == t - 72 * H
    assert next_check_at(Status.ACTIVE, t, 3, (72, 24), after=t - 72 * H) == t - 24 * H
    assert next_check_at(Status.ACTIVE, t, 3, (72, 24), after=t - 24 * H) == t
    # Paid with two days left: the 72-hour reminder has passed and is not due.
    assert next_check_at(Status.ACTIVE, t, 3, (72, 24), after=t - 48 * H) == t - 24 * H
    assert next_check_at(Status.GRACE, t, 3, (72, 24)) == t + dt.timedelta(days=3)


def test_due_notice__the_nearest_passed_reminder_before_expiry() -> None:
    t = dt.datetime(2026, 5, 10, tzinfo=UTC)
    assert due_notice(t, t - 73 * H, (72, 24)) is None
    assert due_notice(t, t - 72 * H, (72, 24)) == 72
    assert due_notice(t, t - 30 * H, (72, 24)) == 72
    # A sweep that missed the 72-hour reminder sends the 24-hour one alone.
    assert due_notice(t, t - 20 * H, (72, 24)) == 24
    assert due_notice(t, t, (72, 24)) is None
    assert due_notice(t, t - H, ()) is None


def test_notice_key__one_per_period_and_reminder() -> None:
    t = dt.datetime(2026, 5, 10, 12, tzinfo=UTC)
    assert notice_key(3, 4, t, 72) == "3:4:2026-05-10T12:00:00.000000Z:72"
    same_moment = t.astimezone(dt.timezone(dt.timedelta(hours=3)))
    assert notice_key(3, 4, same_moment, 72) == notice_key(3, 4, t, 72)
    assert notice_key(3, 4, t + dt.timedelta(days=30), 72) != notice_key(3, 4, t, 72)


@given(moments, moments, graces, reminders)
def test_next_check_at__after_now_and_never_past_the_expiry(
    expires_at: dt.datetime, now: dt.datetime, grace: int, hours: list[int]
) -> None:
    at = next_check_at(Status.ACTIVE, expires_at, grace, hours, after=now)
    assert at is not None and at <= expires_at
    if now < expires_at:
        # The sweep always has a later visit: it cannot be due again at once, nor skip one.
        assert at > now
        assert due_notice(expires_at, at, hours) is not None or at == expires_at


@given(moments, moments, reminders)
def test_due_notice__matches_brute_force(
    expires_at: dt.datetime, now: dt.datetime, hours: list[int]
) -> None:
    passed = sorted(h for h in hours if now < expires_at and now >= expires_at - h * H)
    assert due_notice(expires_at, now, hours) == (passed[0] if passed else None)


@given(statuses, moments, moments, graces, reminders)
def test_decide_due__moves_like_next_status_and_reminds_only_the_active(
    status: Status, expires_at: dt.datetime, now: dt.datetime, grace: int, hours: list[int]
) -> None:
    decision = decide_due(status, expires_at, grace, hours, now)
    assert decision.status is next_status(status, expires_at, now, grace)
    if decision.status is Status.ACTIVE:
        assert decision.notice_hours == due_notice(expires_at, now, hours)
        # Due again no earlier than now (the sweep takes `next_check_at < now`): no loop.
        assert decision.next_check_at is not None and decision.next_check_at >= now
    else:
        assert decision.notice_hours is None
        assert decision.next_check_at == next_check_at(decision.status, expires_at, grace)


class MembershipMachine(RuleBasedStateMachine):
    """Payments and sweeps in any order, time only moving forward."""

    def __init__(self) -> None:
        super().__init__()
        self.now = dt.datetime(2026, 1, 1, tzinfo=UTC)
        self.grace = 3
        self.status: Status | None = None
        self.expires_at: dt.datetime | None = None
        self.start: dt.datetime | None = None
        self.applied: list[Extension] = []

    @rule(days=st.integers(min_value=0, max_value=40), hours=st.integers(0, 23))
    def time_passes(self, days: int, hours: int) -> None:
        self.now += dt.timedelta(days=days, hours=hours)

    @rule(period=st.integers(min_value=1, max_value=60), back=st.integers(0, 3600))
    def payment(self, period: int, back: int) -> None:
        paid_at = self.now - dt.timedelta(seconds=back)
        self.expires_at = extend(self.expires_at, paid_at, period)
        self.applied.append(Extension(paid_at, period))
        self.status = Status.ACTIVE

    @precondition(lambda self: self.status is not None)
    @rule()
    def sweep(self) -> None:
        assert self.status is not None and self.expires_at is not None
        before = self.status
        self.status = next_status(self.status, self.expires_at, self.now, self.grace)
        assert RANK[self.status] >= RANK[before]

    @invariant()
    def history_replays_to_the_state(self) -> None:
        assert replay(self.applied, self.start) == self.expires_at

    @invariant()
    def active_only_while_paid_up_or_not_yet_swept(self) -> None:
        if self.status is Status.EXPIRED:
            assert self.expires_at is not None
            assert self.now > self.expires_at + dt.timedelta(days=self.grace)


TestMembershipMachine = MembershipMachine.TestCase


def test_after_refund__the_survivors_replay_sets_it_and_the_status_never_moves_back() -> None:
    now = dt.datetime(2026, 12, 3, tzinfo=dt.UTC)
    ahead = now + dt.timedelta(days=10)
    behind = now - dt.timedelta(days=1)
    assert after_refund(Status.ACTIVE, ahead, now, 3) == (Status.ACTIVE, ahead)
    # A day past the replayed end, within 3 days of grace.
    assert after_refund(Status.ACTIVE, behind, now, 3) == (Status.GRACE, behind)
    assert after_refund(Status.EXPIRED, ahead, now, 3) == (Status.EXPIRED, ahead)
    # Nothing survives: no paid period to be in grace after, and the next payment counts as
    # a first one.
    assert after_refund(Status.ACTIVE, None, now, 3) == (Status.EXPIRED, VOID)
    paid_at = dt.datetime(2026, 12, 4, tzinfo=dt.UTC)
    assert extend(VOID, paid_at, 30) == extend(None, paid_at, 30)


@given(
    start=moments,
    removed_at=moments,
    days=st.lists(st.integers(min_value=1, max_value=400), max_size=5),
)
def test_removal__cuts_the_paid_time_to_its_moment_and_only_what_follows_moves_it_again(
    start: dt.datetime, removed_at: dt.datetime, days: list[int]
) -> None:
    before = [Extension(start, d) for d in days] or [Grant(start)]
    paid = replay(before)
    assert paid is not None
    cut = replay([*before, Removal(removed_at)])
    assert cut == min(paid, removed_at)
    assert ended([*before, Removal(removed_at)])
    # A payment after the removal starts from its own date, as a first one would.
    later = max(removed_at, paid) + dt.timedelta(days=1)
    again = [*before, Removal(removed_at), Extension(later, 30)]
    assert replay(again) == later + dt.timedelta(days=30)
    assert not ended(again)


def test_reconciled__a_removed_membership_is_expired_whatever_the_clock_says() -> None:
    now = dt.datetime(2026, 12, 3, tzinfo=dt.UTC)
    # Removed an hour ago: by the clock alone it would be in grace.
    at = now - dt.timedelta(hours=1)
    assert reconciled(Status.EXPIRED, at, at, now, 3, removed=True) is None
    assert reconciled(Status.EXPIRED, at, at, now, 3) == (Status.GRACE, at)
    assert reconciled(Status.GRACE, at, at, now, 3, removed=True) == (Status.EXPIRED, at)
    assert reconciled(Status.ACTIVE, now, at, now, 3, removed=True) == (Status.EXPIRED, at)
