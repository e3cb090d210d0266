"""The bot's billing client: what retrying could change is RetryLater, what it cannot is said."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from botedge.billing_client import WAITING, BillingClient, Invoice, Offer, PlanOffer
from botedge.errors import RetryLater
from botedge.pay import offer_message, plan_message
from botedge.words import FSI, PDI, Words
from shared.settings import Secret

EN = Words().speech("en")


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
    return asyncio.run(billing.invoice(7, 3, "subgate", 5))


@pytest.mark.parametrize(("status", "fail"), [(503, False), (500, False), (429, False), (0, True)])
def test_invoice__unreachable_or_failing_billing_is_retried(status: int, fail: bool) -> None:
    with pytest.raises(RetryLater):
        invoice(client(status, fail=fail))


@pytest.mark.parametrize(("status", "fail"), [(502, False), (0, True)])
def test_billing_failing_ten_times__the_breaker_parks_the_next_unasked_and_all_tell_waiting(
    status: int, fail: bool
) -> None:
    billing = client(status, fail=fail)
    raised: list[RetryLater] = []
    for _ in range(12):
        with pytest.raises(RetryLater) as caught:
            invoice(billing)
        raised.append(caught.value)
    assert [e.parked for e in raised] == [False] * 10 + [True] * 2
    assert all(e.notice == WAITING for e in raised)
    assert raised[-1].retry_after > 0


@pytest.mark.parametrize("status", [404, 422, 429])
def test_billing_answering_4xx__never_opens_its_breaker(status: int) -> None:
    billing = client(status, {"type": "/problems/unknown-channel"})
    for _ in range(30):
        try:
            invoice(billing)
        except RetryLater as error:
            assert not error.parked
    assert billing.calls.breaker.wait() == 0.0


def test_invoice__the_request_key_goes_to_billing() -> None:
    seen: list[bytes] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return httpx.Response(201, json={"amount": "1", "currency": "USD", "list_price": "1"})

    billing = BillingClient(
        httpx.AsyncClient(transport=httpx.MockTransport(answer)), "http://b", Secret("t" * 20)
    )
    asyncio.run(billing.invoice(7, 3, "subgate", 5, request_key="botedge:9"))
    assert b'"request_key":"botedge:9"' in seen[0]


def test_invoice__not_paid_plan_off_and_gateway_off_are_answers_not_retries() -> None:
    assert invoice(client(404, {"type": "/problems/unknown-channel"})) == "not_paid"
    assert invoice(client(404, {"type": "/problems/unknown-plan"})) == "plan_off"
    assert invoice(client(422, {"type": "/problems/gateway-not-offered"})) == "gateway_off"
    assert invoice(client(422, {"type": "/problems/unknown-gateway"})) == "gateway_off"
    made = invoice(client(201, {"pay_url": "https://pay/x", "amount": "1.00", "currency": "USD"}))
    assert made == Invoice("https://pay/x", "1.00", "USD", "subgate")


TITLES = {"stripe": "Stripe", "subgate": "Subgate"}
MONTH = PlanOffer(5, "Month", "12.50", "UAH", 1, ("stripe", "subgate"))
YEAR = PlanOffer(6, "Year <1>", "120", "JPY", 365, ("subgate",))


def test_offer_message__one_plan_escaped_title_and_a_button_per_gateway() -> None:
    text, markup = offer_message(Offer(3, "A <b> & C", (MONTH,), TITLES), EN)
    assert text == f"<b>{FSI}A &lt;b&gt; &amp; C{PDI}</b>: 12.50 UAH for 1 day.\nChoose how to pay:"
    assert markup == {
        "inline_keyboard": [
            [{"text": "Pay with Stripe", "callback_data": "pay:3:stripe:5"}],
            [{"text": "Pay with Subgate", "callback_data": "pay:3:subgate:5"}],
        ]
    }
    assert offer_message(None, EN)[1] is None
    assert offer_message(Offer(3, "A", ()), EN)[0].startswith("Payments are not open")


def test_offer_message__several_plans_a_button_each_then_the_plans_gateways_and_back() -> None:
    offer = Offer(3, "Club", (MONTH, YEAR), TITLES)
    text, markup = offer_message(offer, EN)
    assert text == f"<b>{FSI}Club{PDI}</b>\nChoose a plan:"
    assert markup == {
        "inline_keyboard": [
            [{"text": f"{FSI}Month{PDI}: 12.50 UAH for 1 day", "callback_data": "plan:3:5"}],
            [{"text": f"{FSI}Year <1>{PDI}: 120 JPY for 365 days", "callback_data": "plan:3:6"}],
        ]
    }
    text, markup = plan_message(offer, YEAR, EN)
    assert (
        text == f"<b>{FSI}Club{PDI}</b> ({FSI}Year &lt;1&gt;{PDI}): 120 JPY for 365 days.\n"
        "Choose how to pay:"
    )
    assert markup == {
        "inline_keyboard": [
            [{"text": "Pay with Subgate", "callback_data": "pay:3:subgate:6"}],
            [{"text": "« All plans", "callback_data": "plan:3"}],
        ]
    }
    # Telegram's limit on callback data, with the largest ids.
    widest = PlanOffer(2**31 - 1, "x", "1", "USD", 1, ("wayforpay",))
    _, markup = plan_message(Offer(2**31 - 1, "x", (widest, MONTH)), widest, EN)
    assert all(
        len(b["callback_data"].encode()) <= 64 for row in markup["inline_keyboard"] for b in row
    )


def test_offer__plans_without_a_gateway_on_are_left_out() -> None:
    body = {
        "gateways": ["subgate"],
        "titles": {"subgate": "Subgate"},
        "offer": {
            "title": "Club",
            "plans": [
                {
                    "id": 1,
                    "name": "M",
                    "amount": "5.00",
                    "currency": "USD",
                    "period_days": 30,
                    "gateways": [],
                },
                {
                    "id": 2,
                    "name": "Y",
                    "amount": "50.00",
                    "currency": "USD",
                    "period_days": 365,
                    "gateways": ["subgate"],
                },
            ],
        },
    }
    offer = asyncio.run(client(200, body).offer(3))
    assert offer is not None
    assert [plan.id for plan in offer.plans] == [2]
