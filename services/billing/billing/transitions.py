"""The membership state machine, pure: no I/O, no clock; time comes in as an argument.

A membership only moves forward, active -> grace -> expired, under the sweep; only a payment
brings it back to active, by the extension rule.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    ACTIVE = "active"
    """Paid up: `now <= expires_at`."""
    GRACE = "grace"
    """Past `expires_at` but within the grace days: still in the channel, reminded to pay."""
    EXPIRED = "expired"
    """Past the grace days: removed from the channel; terminal for the sweep."""


_RANK = {Status.ACTIVE: 0, Status.GRACE: 1, Status.EXPIRED: 2}


def _aware(name: str, value: dt.datetime) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got naive {value!r}")


def _status(value: Status | str) -> Status:
    try:
        return Status(value)
    except ValueError:
        raise ValueError(f"unknown membership status {value!r}") from None


def target_status(expires_at: dt.datetime, now: dt.datetime, grace_days: int) -> Status:
    """Where the clock alone puts a membership."""
    if now > expires_at + dt.timedelta(days=grace_days):
        return Status.EXPIRED
    if now > expires_at:
        return Status.GRACE
    return Status.ACTIVE


def next_status(
    status: Status | str, expires_at: dt.datetime, now: dt.datetime, grace_days: int
) -> Status:
    """The later of the current status and the clock's target: never moves backward."""
    current = _status(status)
    _aware("expires_at", expires_at)
    _aware("now", now)
    if isinstance(grace_days, bool) or not isinstance(grace_days, int) or grace_days < 0:
        raise ValueError(f"grace_days must be a non-negative whole number, got {grace_days!r}")
    target = target_status(expires_at, now, grace_days)
    return target if _RANK[target] > _RANK[current] else current


def extend(expires_at: dt.datetime | None, paid_at: dt.datetime, period_days: int) -> dt.datetime:
    """The extension rule: `greatest(expires_at, paid_at) + period`."""
    _aware("paid_at", paid_at)
    if period_days <= 0:
        raise ValueError(f"period_days must be positive, got {period_days}")
    start = paid_at if expires_at is None else max(expires_at, paid_at)
    return start + dt.timedelta(days=period_days)


def next_check_at(
    status: Status,
    expires_at: dt.datetime,
    grace_days: int,
    reminder_hours: Iterable[int] = (),
    after: dt.datetime | None = None,
) -> dt.datetime | None:
    """When the sweep next has something to decide; None once expired. An active membership is
    also due at each reminder time (`reminder_hours` before it expires) still after `after`,
    so a reminder whose time has passed when the period starts is not sent."""
    if status is Status.ACTIVE:
        times = [expires_at]
        for hours in reminder_hours:
            at = expires_at - dt.timedelta(hours=hours)
            if after is None or at > after:
                times.append(at)
        return min(times)
    if status is Status.GRACE:
        return expires_at + dt.timedelta(days=grace_days)
    return None


def due_notice(
    expires_at: dt.datetime, now: dt.datetime, reminder_hours: Iterable[int]
) -> int | None:
    """The expiry notice whose time has come: of the reminder times passed before the
    expiry, the nearest to it (a sweep that missed the 72-hour one and finds 20 hours left
    sends the 24-hour one alone). None when none has come, or the membership has expired."""
    if now >= expires_at:
        return None
    passed = [h for h in reminder_hours if expires_at - dt.timedelta(hours=h) <= now]
    return min(passed) if passed else None


@dataclass(frozen=True)
class Decision:
    """What the sweep does with one due membership."""

    status: Status
    """The status after: a move when it differs from the one before."""
    next_check_at: dt.datetime | None
    notice_hours: int | None
    """An expiry notice to write, for an active membership whose reminder time has come."""


def decide_due(
    status: Status | str,
    expires_at: dt.datetime,
    grace_days: int,
    reminder_hours: Iterable[int],
    now: dt.datetime,
) -> Decision:
    """The sweep's decision for a due membership: the status the clock puts it in (never
    backward), the notice due if it stays active, and when to look again."""
    hours = tuple(reminder_hours)
    after = next_status(status, expires_at, now, grace_days)
    if after is Status.ACTIVE:
        return Decision(
            after,
            next_check_at(after, expires_at, grace_days, hours, after=now),
            due_notice(expires_at, now, hours),
        )
    return Decision(after, next_check_at(after, expires_at, grace_days), None)


def notice_key(person_id: int, channel_id: int, expires_at: dt.datetime, hours: int) -> str:
    """One notice per membership period and reminder: a renewal moves `expires_at`, so the
    next period's notices have keys of their own."""
    stamp = expires_at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{person_id}:{channel_id}:{stamp}:{hours}"


@dataclass(frozen=True)
class Extension:
    """One applied payment, as the history records it."""

    paid_at: dt.datetime
    period_days: int


@dataclass(frozen=True)
class Grant:
    """Access granted by the owner, without a payment, until a date."""

    until: dt.datetime


@dataclass(frozen=True)
class Removal:
    """The owner ended the membership at `at`: out of the channel then, no grace."""

    at: dt.datetime


def grant(expires_at: dt.datetime | None, until: dt.datetime) -> dt.datetime:
    """The grant rule: `greatest(expires_at, until)`; a grant never shortens access."""
    _aware("until", until)
    return until if expires_at is None else max(expires_at, until)


def remove(expires_at: dt.datetime, at: dt.datetime) -> dt.datetime:
    """The removal rule: `least(expires_at, at)`; the paid time ends when the owner ends it,
    and one already past stays as it was."""
    _aware("at", at)
    return min(expires_at, at)


Change = Extension | Grant | Removal


def replay(changes: Iterable[Change], start: dt.datetime | None = None) -> dt.datetime | None:
    """`expires_at` after applying the payments, grants and removals in the order they were
    applied."""
    expires_at = start
    for change in changes:
        if isinstance(change, Grant):
            expires_at = grant(expires_at, change.until)
        elif isinstance(change, Removal):
            expires_at = change.at if expires_at is None else remove(expires_at, change.at)
        else:
            expires_at = extend(expires_at, change.paid_at, change.period_days)
    return expires_at


# A membership with no paid time left at all (every payment refunded, no grant): the start of
# Unix time, before any payment's date, so the next payment or grant extends it as it would
# a first one (`extend(VOID, p) == extend(None, p)`), and the history's replay still holds.
VOID = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def after_refund(
    status: Status | str, replayed: dt.datetime | None, now: dt.datetime, grace_days: int
) -> tuple[Status, dt.datetime]:
    """A membership once a refund took a payment out of its history: `expires_at` is the
    replay of what survives and the status follows the clock from where it was. With nothing
    surviving there was never a paid period to be in grace after: expired, and `VOID`."""
    if replayed is None:
        _aware("now", now)
        return Status.EXPIRED, VOID
    return next_status(status, replayed, now, grace_days), replayed


def ended(changes: Iterable[Change]) -> bool:
    """Whether the history ends in a removal: expired whatever the clock says, until a payment
    or a grant after it."""
    last = None
    for change in changes:
        last = change
    return isinstance(last, Removal)


def reconciled(
    status: Status | str,
    expires_at: dt.datetime,
    replayed: dt.datetime | None,
    now: dt.datetime,
    grace_days: int,
    *,
    removed: bool = False,
) -> tuple[Status, dt.datetime] | None:
    """What a membership should be by its history, or None when it is: `expires_at` the replay
    (`VOID` with nothing surviving) and a status no further on than the clock puts it (one
    behind the clock is the sweep's to move, not a difference); expired, exactly, when the
    history ends in a removal (`removed`). Fixed, the status is the clock's, or expired."""
    expected = VOID if replayed is None else replayed
    if removed:
        same = expires_at == expected and _status(status) is Status.EXPIRED
        return None if same else (Status.EXPIRED, expected)
    target = target_status(expected, now, grace_days)
    if expires_at == expected and _RANK[_status(status)] <= _RANK[target]:
        return None
    return target, expected
