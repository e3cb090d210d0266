"""A subgate payment as the gateway posts it to billing: signed, for one open invoice."""

from __future__ import annotations

import json
import time
from typing import Any

from simulators.checkout.callbacks import subgate_signature


def subgate_delivery(secret: str, order: str, payment_id: str) -> bytes:
    """The body of `POST /v1/webhooks/payments/subgate` paying `order` 12.50 USD."""
    payload: dict[str, Any] = {
        "orderReference": order,
        "externalPaymentId": payment_id,
        "amount": "12.50",
        "currency": "USD",
        "timestamp": int(time.time()),
    }
    payload["signature"] = subgate_signature(secret, payload)
    return json.dumps(payload).encode()
