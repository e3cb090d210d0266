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


def next_check_at(status: Status, expires_at: dt.datetime, grace_days: int) -> dt.datetime | None:
    """When the sweep next has something to decide; None once expired."""
    if status is Status.ACTIVE:
        return expires_at
    if status is Status.GRACE:
        return expires_at + dt.timedelta(days=grace_days)
    return None


@dataclass(frozen=True)
class Extension:
    """One applied payment, as the history records it."""

    paid_at: dt.datetime
    period_days: int


def replay(extensions: Iterable[Extension], start: dt.datetime | None = None) -> dt.datetime | None:
    """`expires_at` after applying the payments in the order they were applied."""
    expires_at = start
    for extension in extensions:
        expires_at = extend(expires_at, extension.paid_at, extension.period_days)
    return expires_at
