"""What a payment delivery does, decided from values alone: no I/O, no clock.

`store.record_delivery` reads the invoice under the membership lock, asks `decide`, writes what
it says, and asks again with the stored payment when the insert finds the key already taken.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from billing.model import Delivery, InvoiceRecord, PaymentRecord


class Verdict(StrEnum):
    APPLIED = "applied"
    """New money matching its invoice: store it and extend the membership."""
    AMOUNT_MISMATCH = "amount_mismatch"
    """New money that does not match the invoice: store it, flagged, and extend nothing."""
    GATEWAY_MISMATCH = "gateway_mismatch"
    """Paid through another gateway than the invoice was made for: record it, store nothing."""
    DUPLICATE = "duplicate"
    """The same payment again: nothing more to do."""
    CONFLICT = "conflict"
    """The payment key reused with other business fields: record it, change nothing."""


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str | None = None
    # Set on APPLIED when the invoice was already paid by another payment: kept and shown.
    flag: str | None = None

    @property
    def stores_payment(self) -> bool:
        return self.verdict in (Verdict.APPLIED, Verdict.AMOUNT_MISMATCH)

    @property
    def duplicate(self) -> bool:
        return self.verdict in (Verdict.DUPLICATE, Verdict.CONFLICT)


def decide(invoice: InvoiceRecord, delivery: Delivery, existing: PaymentRecord | None) -> Decision:
    """The verdict on one payment delivery for `invoice`, given the payment stored under the
    delivery's key, if any."""
    if existing is not None:
        same = (
            existing.order_reference == delivery.order_reference
            and existing.amount_minor == delivery.amount_minor
            and existing.currency == delivery.currency
        )
        if same:
            return Decision(Verdict.DUPLICATE, "already received")
        return Decision(
            Verdict.CONFLICT, "payment id already used with different order, amount or currency"
        )
    if delivery.gateway != invoice.gateway:
        return Decision(
            Verdict.GATEWAY_MISMATCH,
            f"invoice is payable through {invoice.gateway}, not {delivery.gateway}",
        )
    if delivery.currency != invoice.currency or delivery.amount_minor != invoice.amount_minor:
        return Decision(
            Verdict.AMOUNT_MISMATCH,
            f"paid {delivery.amount_minor} {delivery.currency} (minor units), invoice is "
            f"{invoice.amount_minor} {invoice.currency}",
        )
    # A subscription's renewal pays its paid invoice again by design; anything else paying a
    # paid invoice is kept and shown to the owner.
    flag = "invoice_already_paid" if invoice.status == "paid" and not delivery.renewal else None
    return Decision(Verdict.APPLIED, flag, flag)
