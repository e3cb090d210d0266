"""Gateway verifiers on raw bodies: known vectors, tampering, staleness, shapes."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from billing.app import STATUS
from billing.errors import BillingError
from billing.model import Outcome, Recorded
from billing.webhooks import (
    Kind,
    Stripe,
    Subgate,
    WayForPay,
    stripe_signature,
    wayforpay_signature,
)
from shared.errors import problem_for
from shared.settings import Secret
from simulators.checkout.callbacks import stripe_header, subgate_signature

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
TS = int(NOW.timestamp())


def test_wayforpay_signature__documented_purchase_example() -> None:
    # WayForPay's purchase-request example: the HMAC-MD5 primitive the callback uses too.
    values = (
        "test_merchant;www.market.ua;DH783023;1415379863;1547.36;UAH;"
        "Процессор Intel Core i5-4670 3.4GHz;Память Kingston DDR3-1600 4096MB PC3-12800;"
        "1;1;1000;547.36"
    ).split(";")
    assert wayforpay_signature("dhkq3vUi94{Z!5frxs(02ML", values) == (
        "3f787303ac524389b4a76383f9508251"
    )


# -- subgate --

SUBGATE = Subgate(Secret("subgate-test-secret-0001"))


def status_of(error: BillingError) -> int:
    problem = problem_for(error, STATUS)
    assert problem is not None, f"{type(error).__name__} has no status"
    return problem.status


def subgate_body(**overrides: object) -> dict[str, object]:
    payload: dict[str, object] = {
        "orderReference": "gh_ref",
        "externalPaymentId": "pay_1",
        "amount": "12.50",
        "currency": "USD",
        "timestamp": TS,
    }
    payload.update(overrides)
    payload.setdefault("signature", subgate_signature("subgate-test-secret-0001", payload))
    return payload


def test_subgate__valid_delivery() -> None:
    delivery = SUBGATE.verify({}, json.dumps(subgate_body()).encode(), NOW)
    assert delivery.kind is Kind.PAYMENT
    assert delivery.amount_minor == Decimal(1250)
    assert delivery.paid_at == NOW
    assert delivery.external_payment_id == "pay_1"


def test_subgate__tampered_amount_is_401() -> None:
    body = subgate_body()
    body["amount"] = "1.00"
    with pytest.raises(BillingError) as error:
        SUBGATE.verify({}, json.dumps(body).encode(), NOW)
    assert (status_of(error.value), error.value.slug) == (401, "bad-signature")


def test_subgate__new_payment_id_on_a_captured_payload_is_401() -> None:
    body = subgate_body()
    body["externalPaymentId"] = "pay_2"
    with pytest.raises(BillingError, match="signature"):
        SUBGATE.verify({}, json.dumps(body).encode(), NOW)


@pytest.mark.parametrize("offset", [-301, 301, -3600])
def test_subgate__stale_or_future_timestamp_is_401(offset: int) -> None:
    body = subgate_body(timestamp=TS + offset)
    with pytest.raises(BillingError) as error:
        SUBGATE.verify({}, json.dumps(body).encode(), NOW)
    assert (status_of(error.value), error.value.slug) == (401, "stale-timestamp")


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"{nope", 400),
        (b"[]", 422),
        (json.dumps({"orderReference": "x", "signature": "ab"}).encode(), 422),
        (json.dumps({"orderReference": "x"}).encode(), 401),
        (json.dumps(subgate_body(timestamp="now")).encode(), 422),
        (json.dumps(subgate_body(amount=12.5)).encode(), 422),
        (json.dumps(subgate_body(orderReference="a\u0000b")).encode(), 400),
    ],
)
def test_subgate__malformed(body: bytes, status: int) -> None:
    with pytest.raises(BillingError) as error:
        SUBGATE.verify({}, body, NOW)
    assert status_of(error.value) == status


# -- WayForPay --

WFP = WayForPay("test_merchant", Secret("wfp-secret-key-01"))


def wayforpay_raw(
    status: str = "Approved", amount: str = "149", merchant: str = "test_merchant"
) -> bytes:
    fields = [merchant, "gh_ref", amount, "UAH", "541963", "41****8217", status, "1100"]
    signature = wayforpay_signature("wfp-secret-key-01", fields)
    # Numbers written as JSON numbers, as WayForPay sends them.
    return (
        f'{{"merchantAccount":"{merchant}","orderReference":"gh_ref","amount":{amount},'
        f'"currency":"UAH","authCode":"541963","cardPan":"41****8217",'
        f'"transactionStatus":"{status}","reasonCode":1100,"merchantSignature":"{signature}"}}'
    ).encode()


def test_wayforpay__signature_over_amount_as_written() -> None:
    for amount, minor in (("149", 14900), ("149.00", 14900), ("149.5", 14950)):
        delivery = WFP.verify({}, wayforpay_raw(amount=amount), NOW)
        assert delivery.kind is Kind.PAYMENT
        assert delivery.amount_minor == minor
        assert delivery.external_payment_id == "gh_ref"
        assert delivery.paid_at == NOW


def test_wayforpay__other_statuses_are_not_payments() -> None:
    delivery = WFP.verify({}, wayforpay_raw(status="Declined"), NOW)
    assert delivery.kind is Kind.NOT_SUCCESS
    assert delivery.external_payment_id is None


def test_wayforpay__tampered_or_foreign_merchant_is_401() -> None:
    raw = wayforpay_raw().replace(b'"amount":149', b'"amount":1')
    with pytest.raises(BillingError, match="signature"):
        WFP.verify({}, raw, NOW)
    other = WayForPay("another_merchant", Secret("wfp-secret-key-01"))
    with pytest.raises(BillingError, match="merchantAccount"):
        other.verify({}, wayforpay_raw(), NOW)


def test_wayforpay__acknowledgement_is_signed_accept() -> None:
    delivery = WFP.verify({}, wayforpay_raw(), NOW)
    answer = WFP.acknowledge(delivery, Outcome(Recorded.APPLIED, False, True, None, None), NOW)
    assert answer == {
        "orderReference": "gh_ref",
        "status": "accept",
        "time": TS,
        "signature": wayforpay_signature("wfp-secret-key-01", ["gh_ref", "accept", str(TS)]),
    }


# -- Stripe --

SECRET = "whsec_test_secret_0001"
STRIPE = Stripe((Secret("whsec_old_secret_0000"), Secret(SECRET)))


def stripe_event(kind: str = "payment_intent.succeeded") -> bytes:
    if kind == "checkout.session.completed":
        obj: dict[str, object] = {
            "object": "checkout.session",
            "client_reference_id": "gh_ref",
            "payment_intent": "pi_123",
            "payment_status": "paid",
            "amount_total": 1250,
            "currency": "usd",
        }
    else:
        obj = {
            "id": "pi_123",
            "object": "payment_intent",
            "amount": 1250,
            "amount_received": 1250,
            "currency": "usd",
            "metadata": {"order_reference": "gh_ref"},
        }
    event = {"id": "evt_1", "type": kind, "created": TS - 5, "data": {"object": obj}}
    return json.dumps(event).encode()


@pytest.mark.parametrize("kind", ["payment_intent.succeeded", "checkout.session.completed"])
def test_stripe__both_events_of_one_payment_share_the_intent_id(kind: str) -> None:
    body = stripe_event(kind)
    delivery = STRIPE.verify({"stripe-signature": stripe_header(SECRET, body, TS)}, body, NOW)
    assert delivery.kind is Kind.PAYMENT
    assert delivery.external_payment_id == "pi_123"
    assert (delivery.amount_minor, delivery.currency) == (1250, "USD")
    assert delivery.paid_at == NOW - dt.timedelta(seconds=5)


def test_stripe__any_v1_against_any_secret() -> None:
    body = stripe_event()
    header = f"t={TS},v1={'0' * 64},v1={stripe_signature(SECRET, TS, body)},v0=abc"
    assert STRIPE.verify({"stripe-signature": header}, body, NOW).kind is Kind.PAYMENT


@pytest.mark.parametrize(
    ("header", "slug"),
    [
        (None, "bad-signature"),
        ("t=abc,v1=00", "bad-signature"),
        (f"t={TS}", "bad-signature"),
        (f"t={TS},v1={'0' * 64}", "bad-signature"),
    ],
)
def test_stripe__bad_headers(header: str | None, slug: str) -> None:
    headers = {} if header is None else {"stripe-signature": header}
    with pytest.raises(BillingError) as error:
        STRIPE.verify(headers, stripe_event(), NOW)
    assert (status_of(error.value), error.value.slug) == (401, slug)


@pytest.mark.parametrize("offset", [-301, 301])
def test_stripe__tolerance_both_directions(offset: int) -> None:
    body = stripe_event()
    header = stripe_header(SECRET, body, TS + offset)
    with pytest.raises(BillingError, match="from now"):
        STRIPE.verify({"stripe-signature": header}, body, NOW)


def test_stripe__other_event_types_are_ignored() -> None:
    body = json.dumps(
        {"id": "evt_2", "type": "customer.created", "created": TS, "data": {"object": {}}}
    ).encode()
    delivery = STRIPE.verify({"stripe-signature": stripe_header(SECRET, body, TS)}, body, NOW)
    assert delivery.kind is Kind.IGNORED


@pytest.mark.parametrize("status", ["Refunded", "Voided"])
def test_wayforpay__refunded_or_voided_reverses_the_payment_of_its_order(status: str) -> None:
    delivery = WFP.verify({}, wayforpay_raw(status=status), NOW)
    assert delivery.kind is Kind.REFUND
    assert (delivery.external_payment_id, delivery.external_refund_id) == (
        "gh_ref",
        f"gh_ref:{status}",
    )
    assert (delivery.amount_minor, delivery.currency, delivery.chargeback) == (14900, "UAH", False)


def stripe_refund_event(kind: str, obj: dict[str, object]) -> bytes:
    return json.dumps(
        {"id": "evt_r", "type": kind, "created": TS, "data": {"object": obj}}
    ).encode()


def test_stripe__a_refunded_charge_and_a_dispute_reverse_the_payment_of_their_intent() -> None:
    refunded = stripe_refund_event(
        "charge.refunded",
        {"id": "ch_1", "payment_intent": "pi_123", "amount_refunded": 500, "currency": "usd"},
    )
    disputed = stripe_refund_event(
        "charge.dispute.created",
        {
            "id": "dp_1",
            "charge": "ch_1",
            "payment_intent": "pi_123",
            "amount": 1250,
            "currency": "usd",
        },
    )
    found = [
        STRIPE.verify({"stripe-signature": stripe_header(SECRET, body, TS)}, body, NOW)
        for body in (refunded, disputed)
    ]
    assert [
        (d.kind, d.external_payment_id, d.external_refund_id, d.amount_minor, d.chargeback)
        for d in found
    ] == [
        (Kind.REFUND, "pi_123", "ch_1:refunded", 500, False),
        (Kind.REFUND, "pi_123", "dp_1", 1250, True),
    ]
