"""The values billing's parts pass each other: a verified delivery, an invoice as read under its
membership's lock, a payment already on record. Plain data; no I/O."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any, NewType

from billing.transitions import Status

PersonId = NewType("PersonId", int)
ChannelId = NewType("ChannelId", int)


class Kind(StrEnum):
    PAYMENT = "payment"
    """Money received: goes through the exactly-once path."""
    NOT_SUCCESS = "not_success"
    """An authentic status that is not a payment (declined, pending, ...)."""
    IGNORED = "ignored"
    """An authentic event type we do not act on."""
    REFUND = "refund"
    """Money given back (a refund or a chargeback): takes back what the payment bought."""


@dataclass(frozen=True)
class Delivery:
    """One authentic gateway callback, as its verifier read it."""

    gateway: str
    kind: Kind
    event_type: str
    payload: dict[str, Any]
    order_reference: str | None = None
    external_payment_id: str | None = None
    amount_minor: Decimal | None = None
    currency: str | None = None
    paid_at: dt.datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # A NOT_SUCCESS that says the payment failed (not one still pending): the person is told.
    declined: bool = False
    # A subscription's later charge, which pays the invoice it began with once more.
    renewal: bool = False
    # A REFUND's own key (a redelivery carries the same) and whether it is a chargeback; the
    # payment it reverses is the one under (gateway, external_payment_id).
    external_refund_id: str | None = None
    chargeback: bool = False


@dataclass(frozen=True)
class MembershipKey:
    """The two ints of `pg_advisory_xact_lock(person_id, channel_id)`."""

    person_id: PersonId
    channel_id: ChannelId

    def params(self) -> dict[str, int]:
        return {"person_id": self.person_id, "channel_id": self.channel_id}


@dataclass(frozen=True)
class InvoiceRecord:
    """An invoice read under its membership's lock."""

    id: int
    order_reference: str
    key: MembershipKey
    amount_minor: Decimal
    currency: str
    period_days: int
    grace_days: int
    status: str
    gateway: str

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> InvoiceRecord:
        return cls(
            id=int(row["id"]),
            order_reference=str(row["order_reference"]),
            key=MembershipKey(PersonId(row["person_id"]), ChannelId(row["channel_id"])),
            amount_minor=Decimal(row["amount_minor"]),
            currency=str(row["currency"]),
            period_days=int(row["period_days"]),
            grace_days=int(row["grace_days"]),
            status=str(row["status"]),
            gateway=str(row["gateway"]),
        )


@dataclass(frozen=True)
class PaymentRecord:
    """A payment already stored under the delivery's key (gateway, external payment id)."""

    id: int
    order_reference: str
    amount_minor: Decimal
    currency: str

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> PaymentRecord:
        return cls(
            id=int(row["id"]),
            order_reference=str(row["order_reference"]),
            amount_minor=Decimal(row["amount_minor"]),
            currency=str(row["currency"]),
        )


class Recorded(StrEnum):
    """What came of a delivery, as `gateway_events.outcome` records it."""

    APPLIED = "applied"
    """A payment stored and its membership extended."""
    DUPLICATE = "duplicate"
    """The same payment again: nothing more done."""
    NOT_SUCCESS = "not_success"
    """An authentic status that is not a payment."""
    IGNORED = "ignored"
    """An authentic event type not acted on."""
    ORPHAN = "orphan"
    """A payment for an order reference we never issued."""
    AMOUNT_MISMATCH = "amount_mismatch"
    """Money that does not match its invoice: stored, flagged, nothing extended."""
    GATEWAY_MISMATCH = "gateway_mismatch"
    """Paid through another gateway than its invoice's: recorded, nothing stored."""
    CONFLICT = "conflict"
    """A payment key reused with other business fields: recorded, nothing changed."""
    REFUND_APPLIED = "refund_applied"
    """A payment refunded: what it bought taken back."""
    REFUND_DUPLICATE = "refund_duplicate"
    """The same refund again, or the payment refunded already: nothing more done."""
    REFUND_UNKNOWN = "refund_unknown"
    """A refund of a payment we never received: recorded for the owner."""


@dataclass(frozen=True)
class Membership:
    status: Status
    expires_at: dt.datetime
    grace_days: int
    # The channel's reminder times, hours before expiry.
    reminder_hours: tuple[int, ...] = ()

    def as_json(self) -> dict[str, str]:
        return {"status": self.status.value, "expires_at": self.expires_at.isoformat()}


@dataclass(frozen=True)
class Held:
    """A membership an invoice pays for, as read under its lock: one for a channel's plan, one
    per channel for a bundle's."""

    channel_id: ChannelId
    membership: Membership | None
    # The channel's reminder times, hours before expiry.
    reminders: tuple[int, ...]


@dataclass(frozen=True)
class Outcome:
    """What came of one delivery; `recorded` is what gateway_events keeps."""

    recorded: Recorded
    duplicate: bool
    applied: bool
    reason: str | None
    membership: Membership | None
    payment_id: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "duplicate": self.duplicate,
            "applied": self.applied,
            "reason": self.reason,
            "membership": self.membership.as_json() if self.membership else None,
        }
