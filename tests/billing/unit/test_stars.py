"""The Stars pre-checkout's verdict and a recorded payment as a delivery: values only."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from billing.model import Kind
from billing.stars import delivery_of, refusal

NOW = dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.UTC)
BUYER = 7601


def invoice(**overrides: Any) -> dict[str, Any]:
    return {
        "status": "open",
        "expires_at": NOW + dt.timedelta(hours=1),
        "amount_minor": 250,
        "currency": "XTR",
        "gateway": "telegram_stars",
        "telegram_user_id": BUYER,
        **overrides,
    }


def test_refusal__an_open_unexpired_invoice_of_the_payer_at_its_price_passes() -> None:
    assert refusal(invoice(), BUYER, "XTR", 250, NOW) is None


@pytest.mark.parametrize(
    ("found", "user", "currency", "total", "reason"),
    [
        (None, BUYER, "XTR", 250, "unknown"),
        (invoice(gateway="stripe"), BUYER, "XTR", 250, "unknown"),
        (invoice(), BUYER + 1, "XTR", 250, "not-yours"),
        (invoice(status="paid"), BUYER, "XTR", 250, "paid"),
        (invoice(status="expired"), BUYER, "XTR", 250, "expired"),
        (invoice(status="cancelled"), BUYER, "XTR", 250, "expired"),
        (invoice(expires_at=NOW), BUYER, "XTR", 250, "expired"),
        (invoice(), BUYER, "XTR", 249, "amount"),
        (invoice(), BUYER, "USD", 250, "currency"),
    ],
    ids=[
        "no invoice",
        "a card gateway's invoice",
        "another person's",
        "paid",
        "expired",
        "cancelled",
        "past its time",
        "another amount",
        "another currency",
    ],
)
def test_refusal__names_why(
    found: dict[str, Any] | None, user: int, currency: str, total: int, reason: str
) -> None:
    assert refusal(found, user, currency, total, NOW) == reason


def row(**overrides: Any) -> dict[str, Any]:
    return {
        "id": 1,
        "bot_id": 2,
        "invoice_payload": "gh_abc",
        "currency": "XTR",
        "total_amount": 250,
        "telegram_payment_charge_id": "stx1",
        "provider_payment_charge_id": None,
        "is_recurring": False,
        "is_first_recurring": False,
        "subscription_expiration_date": None,
        "paid_at": NOW,
        **overrides,
    }


def test_delivery_of__a_payment_is_keyed_by_its_charge_and_pays_its_payload() -> None:
    delivery = delivery_of(row())
    assert (delivery.gateway, delivery.kind, delivery.event_type) == (
        "telegram_stars",
        Kind.PAYMENT,
        "successful_payment",
    )
    assert (delivery.order_reference, delivery.external_payment_id) == ("gh_abc", "stx1")
    assert (delivery.amount_minor, delivery.currency, delivery.paid_at) == (
        Decimal(250),
        "XTR",
        NOW,
    )
    assert delivery.renewal is False


@pytest.mark.parametrize(
    ("recurring", "first", "renewal"),
    [(True, True, False), (True, False, True), (False, False, False)],
    ids=["a subscription's first", "its renewal", "one-off"],
)
def test_delivery_of__only_a_later_charge_of_a_subscription_is_a_renewal(
    recurring: bool, first: bool, renewal: bool
) -> None:
    delivery = delivery_of(row(is_recurring=recurring, is_first_recurring=first))
    assert delivery.renewal is renewal
    assert (delivery.event_type == "renewal") is renewal
