"""The bot's billing client: what retrying could change is RetryLater, what it cannot is said."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from botedge.handlers import RetryLater
from botedge.pay import BillingClient, Invoice, Offer, offer_message
from shared.settings import Secret


def client(status: int, body: Any = None, *, fail: bool = False) -> BillingClient:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == "Bearer service-token-000000"
        if fail:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(status, json=body if body is not None else {})

    return BillingClient(
        httpx.AsyncClient(transport=httpx.MockTransport(answer)),
        "http://billing",
        Secret("service-token-000000"),
    )


def invoice(billing: BillingClient) -> Invoice | str:
    return asyncio.run(billing.invoice(7, 3, "subgate"))


@pytest.mark.parametrize(("status", "fail"), [(503, False), (500, False), (429, False), (0, True)])
def test_invoice__unreachable_or_failing_billing_is_retried(status: int, fail: bool) -> None:
    with pytest.raises(RetryLater):
        invoice(client(status, fail=fail))


def test_invoice__not_paid_and_gateway_off_are_answers_not_retries() -> None:
    assert invoice(client(404, {"type": "/problems/unknown-channel"})) == "not_paid"
    assert invoice(client(422, {"type": "/problems/unknown-gateway"})) == "gateway_off"
    made = invoice(client(201, {"pay_url": "https://pay/x", "amount": "1.00", "currency": "USD"}))
    assert made == Invoice("https://pay/x", "1.00", "USD", "subgate")


def test_offer_message__escaped_title_and_a_button_per_gateway() -> None:
    offer = Offer(
        3,
        "A <b> & C",
        "12.50",
        "UAH",
        1,
        ("stripe", "subgate"),
        {"stripe": "Stripe", "subgate": "Subgate"},
    )
    text, markup = offer_message(offer)
    assert text == "<b>A &lt;b&gt; &amp; C</b>: 12.50 UAH for 1 day.\nChoose how to pay:"
    assert markup == {
        "inline_keyboard": [
            [{"text": "Pay with Stripe", "callback_data": "pay:3:stripe"}],
            [{"text": "Pay with Subgate", "callback_data": "pay:3:subgate"}],
        ]
    }
    assert offer_message(None)[1] is None
    assert offer_message(Offer(3, "A", "1", "USD", 30, ()))[0].startswith("Payments are not open")
