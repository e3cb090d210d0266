"""Payment gateway verifiers: one per signature scheme, each checking the raw body first.

A verifier turns (headers, raw body, now) into a `Delivery`, or raises one of billing's errors
that retrying cannot fix (malformed, bad signature, stale, invalid). It never touches the
database. After the delivery is recorded, `acknowledge` builds the body the gateway expects.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from billing import money
from billing.errors import BadSignature, InvalidBody, Malformed, StaleTimestamp
from billing.model import Delivery, Kind, Outcome
from shared import jsonsafe
from shared.settings import Secret

TOLERANCE_SECONDS = 300
# Unix seconds a timestamp may carry: 1970 to the end of year 9999 (what datetime can hold).
LATEST_TIMESTAMP = 253_402_300_799
_UNIX_SECONDS = re.compile(r"[0-9]{1,12}", re.ASCII)


class Verifier(Protocol):
    @property
    def name(self) -> str: ...

    def verify(self, headers: Mapping[str, str], body: bytes, now: dt.datetime) -> Delivery: ...

    def acknowledge(self, delivery: Delivery, outcome: Outcome, now: dt.datetime) -> Any:
        """The JSON the gateway expects back, given what came of the delivery."""
        ...


MISMATCH = "signature does not match"


def _json_object(body: bytes, *, numbers_as_text: bool = False) -> dict[str, Any]:
    try:
        value = jsonsafe.loads(body, numbers_as_text=numbers_as_text)
    except jsonsafe.UnsafeJson as error:
        raise Malformed(f"body is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise InvalidBody("body must be a JSON object")
    return value


def _signature(payload: Mapping[str, Any], key: str) -> str:
    """The presented signature: missing, empty or not text is a bad signature, not a bad body."""
    value = payload.get(key)
    if not isinstance(value, str) or not value:
        raise BadSignature(f"missing signature `{key}`")
    return value


def _matches(expected_hex: str, presented: str) -> bool:
    """Constant-time, on bytes: compare_digest refuses non-ASCII text instead of answering."""
    return hmac.compare_digest(expected_hex.encode(), presented.lower().encode())


def _unix_seconds(value: Any, key: str) -> dt.datetime:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidBody(f"field `{key}` must be whole unix seconds")
    if not 0 <= value <= LATEST_TIMESTAMP:
        raise InvalidBody(f"field `{key}` is out of range")
    return dt.datetime.fromtimestamp(value, dt.UTC)


def _text(payload: Mapping[str, Any], key: str, *, allow_empty: bool = False) -> str:
    if key not in payload:
        raise InvalidBody(f"missing field `{key}`")
    value = payload[key]
    if not isinstance(value, str):
        raise InvalidBody(f"field `{key}` must be a string")
    if not allow_empty and not value:
        raise InvalidBody(f"field `{key}` must not be empty")
    return value


def _currency(value: str, key: str = "currency") -> str:
    code = value.upper()
    if not money.is_currency(code):
        raise InvalidBody(f"field `{key}` is not an ISO 4217 currency: {value!r}")
    return code


def _minor(amount_text: str, currency: str, key: str = "amount") -> Decimal:
    try:
        return money.to_minor(money.parse_major(amount_text), currency)
    except money.AmountError as error:
        raise InvalidBody(f"field `{key}`: {error}") from None


def _hex_hmac(key: Secret, message: str, digest: str) -> str:
    return hmac.new(key.reveal().encode(), message.encode(), digest).hexdigest()


# -- subgate --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Subgate:
    """Our own scheme: every business field and a timestamp, HMAC-SHA256 signed."""

    secret: Secret
    name: str = "subgate"

    def verify(self, headers: Mapping[str, str], body: bytes, now: dt.datetime) -> Delivery:
        payload = _json_object(body)
        signature = _signature(payload, "signature")
        order = _text(payload, "orderReference")
        external = _text(payload, "externalPaymentId")
        amount = _text(payload, "amount")
        currency_text = _text(payload, "currency")
        timestamp = payload.get("timestamp")
        if isinstance(timestamp, bool) or not isinstance(timestamp, int):
            raise InvalidBody("field `timestamp` must be whole unix seconds")
        message = f"{order};{external};{amount};{currency_text};{timestamp}"
        expected = _hex_hmac(self.secret, message, "sha256")
        if not _matches(expected, signature):
            raise BadSignature(MISMATCH)
        skew = abs(now.timestamp() - timestamp)
        if skew > TOLERANCE_SECONDS:
            raise StaleTimestamp(
                f"timestamp is {skew:.0f} s from now; at most {TOLERANCE_SECONDS} s"
            )
        currency = _currency(currency_text)
        return Delivery(
            gateway=self.name,
            kind=Kind.PAYMENT,
            event_type="payment",
            payload=payload,
            order_reference=order,
            external_payment_id=external,
            amount_minor=_minor(amount, currency),
            currency=currency,
            paid_at=_unix_seconds(timestamp, "timestamp"),
        )

    def acknowledge(self, delivery: Delivery, outcome: Outcome, now: dt.datetime) -> Any:
        return outcome.as_json()


# -- WayForPay ------------------------------------------------------------------------------


# WayForPay statuses that end a payment unpaid (others, such as InProcessing, may still pay).
WAYFORPAY_DECLINES = frozenset({"Declined", "Expired"})
# ... and those that give an approved payment's money back.
WAYFORPAY_REFUNDS = frozenset({"Refunded", "Voided"})
# Stripe's checkout sessions that end unpaid: an async method that failed, a session that
# expired. (`checkout.session.completed` with `unpaid` is an async payment still on its way.)
STRIPE_DECLINES = frozenset({"checkout.session.async_payment_failed", "checkout.session.expired"})
WAYFORPAY_SIGNED = (
    "merchantAccount",
    "orderReference",
    "amount",
    "currency",
    "authCode",
    "cardPan",
    "transactionStatus",
    "reasonCode",
)


def wayforpay_signature(key: str, values: list[str]) -> str:
    """hex HMAC-MD5 over the values joined with `;` (WayForPay's merchantSignature)."""
    return hmac.new(key.encode(), ";".join(values).encode(), hashlib.md5).hexdigest()


@dataclass(frozen=True)
class WayForPay:
    """WayForPay's serviceUrl callback; answered with its own signed `accept`."""

    merchant_account: str
    secret: Secret
    name: str = "wayforpay"

    def verify(self, headers: Mapping[str, str], body: bytes, now: dt.datetime) -> Delivery:
        # Numbers are kept as the text they were written as: the signature covers that text.
        as_text = _json_object(body, numbers_as_text=True)
        payload = _json_object(body)
        signature = _signature(as_text, "merchantSignature")
        values: list[str] = []
        for key in WAYFORPAY_SIGNED:
            value = as_text.get(key, "")
            if value is None:
                value = ""
            if not isinstance(value, str):
                raise InvalidBody(f"field `{key}` must be a string or a number")
            values.append(value)
        expected = wayforpay_signature(self.secret.reveal(), values)
        if not _matches(expected, signature):
            raise BadSignature(MISMATCH)
        merchant, order, amount, currency_text, _, _, status, _ = values
        if not hmac.compare_digest(merchant.encode(), self.merchant_account.encode()):
            raise BadSignature("merchantAccount is not ours")
        if not order:
            raise InvalidBody("missing field `orderReference`")
        if status in WAYFORPAY_REFUNDS:
            currency = _currency(currency_text)
            return Delivery(
                gateway=self.name,
                kind=Kind.REFUND,
                event_type=status,
                payload=payload,
                order_reference=order,
                # The payment's key is its order reference; a refund of it is one per status.
                external_payment_id=order,
                external_refund_id=f"{order}:{status}",
                amount_minor=_minor(amount, currency),
                currency=currency,
            )
        if status != "Approved":
            return Delivery(
                gateway=self.name,
                kind=Kind.NOT_SUCCESS,
                event_type=status or "unknown",
                payload=payload,
                order_reference=order,
                declined=status in WAYFORPAY_DECLINES,
            )
        currency = _currency(currency_text)
        return Delivery(
            gateway=self.name,
            kind=Kind.PAYMENT,
            event_type=status,
            payload=payload,
            order_reference=order,
            external_payment_id=order,
            amount_minor=_minor(amount, currency),
            currency=currency,
            # Nothing in the callback is a signed payment time: the time of receipt is.
            paid_at=now,
        )

    def acknowledge(self, delivery: Delivery, outcome: Outcome, now: dt.datetime) -> Any:
        order = delivery.order_reference or ""
        stamp = int(now.timestamp())
        return {
            "orderReference": order,
            "status": "accept",
            "time": stamp,
            "signature": wayforpay_signature(self.secret.reveal(), [order, "accept", str(stamp)]),
        }


# -- Stripe ---------------------------------------------------------------------------------


def stripe_signature(secret: str, timestamp: int, body: bytes) -> str:
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Stripe:
    """Stripe's `Stripe-Signature: t=...,v1=...` over `{t}.{raw body}`, any secret, any v1."""

    secrets: tuple[Secret, ...]
    name: str = "stripe"

    def verify(self, headers: Mapping[str, str], body: bytes, now: dt.datetime) -> Delivery:
        header = headers.get("stripe-signature")
        if not header:
            raise BadSignature("missing Stripe-Signature header")
        timestamp: int | None = None
        candidates: list[str] = []
        for item in header.split(","):
            key, _, value = item.strip().partition("=")
            if key == "t" and timestamp is None:
                if not _UNIX_SECONDS.fullmatch(value):
                    raise BadSignature("Stripe-Signature has no valid timestamp")
                timestamp = int(value)
            elif key == "v1" and value:
                candidates.append(value.lower())
        if timestamp is None or not candidates:
            raise BadSignature("Stripe-Signature needs t= and at least one v1=")
        matched = False
        for secret in self.secrets:
            expected = stripe_signature(secret.reveal(), timestamp, body)
            for candidate in candidates:
                # Every comparison runs: no early exit that would time the secrets.
                matched |= _matches(expected, candidate)
        if not matched:
            raise BadSignature(MISMATCH)
        skew = abs(now.timestamp() - timestamp)
        if skew > TOLERANCE_SECONDS:
            raise StaleTimestamp(f"signature timestamp is {skew:.0f} s from now")
        event = _json_object(body)
        event_type = _text(event, "type")
        paid_at = _unix_seconds(event.get("created"), "created")
        data = event.get("data")
        obj = data.get("object") if isinstance(data, dict) else None
        if not isinstance(obj, dict):
            raise InvalidBody("missing field `data.object`")
        if event_type == "checkout.session.completed":
            return self._checkout(event, obj, paid_at)
        if event_type == "payment_intent.succeeded":
            return self._payment_intent(event, obj, paid_at)
        if event_type in ("charge.refunded", "charge.dispute.created"):
            return self._refund(event, obj)
        order = obj.get("client_reference_id")
        if event_type in STRIPE_DECLINES and isinstance(order, str) and order:
            return Delivery(
                gateway=self.name,
                kind=Kind.NOT_SUCCESS,
                event_type=event_type,
                payload=event,
                order_reference=order,
                declined=True,
            )
        return Delivery(gateway=self.name, kind=Kind.IGNORED, event_type=event_type, payload=event)

    def _checkout(
        self, event: dict[str, Any], session: dict[str, Any], paid_at: dt.datetime
    ) -> Delivery:
        order = session.get("client_reference_id")
        if session.get("payment_status") not in ("paid", "no_payment_required"):
            return Delivery(
                gateway=self.name,
                kind=Kind.NOT_SUCCESS,
                event_type=f"checkout.session.completed:{session.get('payment_status')}",
                payload=event,
                order_reference=order if isinstance(order, str) else None,
            )
        if not isinstance(order, str) or not order:
            raise InvalidBody("missing field `data.object.client_reference_id`")
        intent = session.get("payment_intent")
        if isinstance(intent, dict):
            intent = intent.get("id")
        if not isinstance(intent, str) or not intent:
            raise InvalidBody("missing field `data.object.payment_intent`")
        return self._payment(event, order, intent, session, "amount_total", paid_at)

    def _payment_intent(
        self, event: dict[str, Any], intent: dict[str, Any], paid_at: dt.datetime
    ) -> Delivery:
        metadata = intent.get("metadata")
        order = metadata.get("order_reference") if isinstance(metadata, dict) else None
        if not isinstance(order, str) or not order:
            raise InvalidBody("missing field `data.object.metadata.order_reference`")
        intent_id = _text(intent, "id")
        key = "amount_received" if "amount_received" in intent else "amount"
        return self._payment(event, order, intent_id, intent, key, paid_at)

    def _payment(
        self,
        event: dict[str, Any],
        order: str,
        intent_id: str,
        obj: dict[str, Any],
        amount_key: str,
        paid_at: dt.datetime,
    ) -> Delivery:
        amount = obj.get(amount_key)
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
            raise InvalidBody(f"field `data.object.{amount_key}` must be whole minor units")
        currency = _currency(_text(obj, "currency"), "data.object.currency")
        return Delivery(
            gateway=self.name,
            kind=Kind.PAYMENT,
            event_type=str(event["type"]),
            payload=event,
            order_reference=order,
            # Both events of one payment carry the PaymentIntent id: they count once.
            external_payment_id=intent_id,
            amount_minor=Decimal(amount),
            currency=currency,
            paid_at=paid_at,
        )

    def _refund(self, event: dict[str, Any], obj: dict[str, Any]) -> Delivery:
        """A charge refunded (whole or part) or disputed, reversing the payment of its
        PaymentIntent. A charge refunded twice is one refund (its id is the key); a dispute
        is keyed by its own id."""
        dispute = event["type"] == "charge.dispute.created"
        intent = obj.get("payment_intent")
        if isinstance(intent, dict):
            intent = intent.get("id")
        own = _text(obj, "id")
        amount = obj.get("amount" if dispute else "amount_refunded")
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
            raise InvalidBody("a refund's amount must be whole minor units")
        return Delivery(
            gateway=self.name,
            kind=Kind.REFUND,
            event_type=str(event["type"]),
            payload=event,
            external_payment_id=intent if isinstance(intent, str) and intent else None,
            external_refund_id=own if dispute else f"{own}:refunded",
            amount_minor=Decimal(amount),
            currency=_currency(_text(obj, "currency"), "data.object.currency"),
            chargeback=dispute,
        )

    def acknowledge(self, delivery: Delivery, outcome: Outcome, now: dt.datetime) -> Any:
        return outcome.as_json()
