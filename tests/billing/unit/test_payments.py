"""The payment decision as a pure function: every verdict, no database."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from billing.model import (
    ChannelId,
    Delivery,
    InvoiceRecord,
    Kind,
    MembershipKey,
    PaymentRecord,
    PersonId,
)
from billing.payments import Verdict, decide

INVOICE = InvoiceRecord(
    id=1,
    order_reference="gh_a",
    key=MembershipKey(PersonId(1), ChannelId(2)),
    amount_minor=Decimal(1250),
    currency="USD",
    period_days=30,
    grace_days=3,
    status="open",
    gateway="subgate",
)


def delivery(**overrides: object) -> Delivery:
    fields: dict[str, object] = {
        "gateway": "subgate",
        "kind": Kind.PAYMENT,
        "event_type": "payment",
        "payload": {},
        "order_reference": "gh_a",
        "external_payment_id": "p1",
        "amount_minor": Decimal(1250),
        "currency": "USD",
        "paid_at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    }
    fields.update(overrides)
    return Delivery(**fields)  # type: ignore[arg-type]


def stored(**overrides: object) -> PaymentRecord:
    fields: dict[str, object] = {
        "id": 9,
        "order_reference": "gh_a",
        "amount_minor": Decimal(1250),
        "currency": "USD",
    }
    fields.update(overrides)
    return PaymentRecord(**fields)  # type: ignore[arg-type]


def test_decide__new_matching_payment_is_applied() -> None:
    decision = decide(INVOICE, delivery(), None)
    assert (decision.verdict, decision.flag, decision.stores_payment) == (
        Verdict.APPLIED,
        None,
        True,
    )


def test_decide__second_payment_of_a_paid_invoice_is_applied_and_flagged() -> None:
    paid = InvoiceRecord(**{**INVOICE.__dict__, "status": "paid"})
    decision = decide(paid, delivery(), None)
    assert (decision.verdict, decision.flag) == (Verdict.APPLIED, "invoice_already_paid")


def test_decide__a_subscriptions_renewal_of_its_paid_invoice_is_applied_unflagged() -> None:
    paid = InvoiceRecord(**{**INVOICE.__dict__, "status": "paid"})
    decision = decide(paid, delivery(renewal=True), None)
    assert (decision.verdict, decision.flag) == (Verdict.APPLIED, None)


@pytest.mark.parametrize(
    "overrides", [{"amount_minor": Decimal(1249)}, {"currency": "EUR"}], ids=["amount", "currency"]
)
def test_decide__amount_or_currency_off_is_kept_not_applied(overrides: dict[str, object]) -> None:
    decision = decide(INVOICE, delivery(**overrides), None)
    assert (decision.verdict, decision.stores_payment) == (Verdict.AMOUNT_MISMATCH, True)


def test_decide__another_gateway_is_recorded_and_not_stored() -> None:
    decision = decide(INVOICE, delivery(gateway="stripe"), None)
    assert (decision.verdict, decision.stores_payment) == (Verdict.GATEWAY_MISMATCH, False)


def test_decide__same_payment_again_is_a_duplicate() -> None:
    decision = decide(INVOICE, delivery(), stored())
    assert (decision.verdict, decision.duplicate) == (Verdict.DUPLICATE, True)


@pytest.mark.parametrize(
    "overrides",
    [{"order_reference": "gh_b"}, {"amount_minor": Decimal(1)}, {"currency": "EUR"}],
    ids=["order", "amount", "currency"],
)
def test_decide__key_reused_with_other_fields_is_a_conflict(overrides: dict[str, object]) -> None:
    decision = decide(INVOICE, delivery(), stored(**overrides))
    assert (decision.verdict, decision.duplicate, decision.stores_payment) == (
        Verdict.CONFLICT,
        True,
        False,
    )
