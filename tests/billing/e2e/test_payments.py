"""Payment webhooks end to end: real process, real HTTP, real PostgreSQL."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import Any

import httpx
import psycopg
import pytest

from shared.tls import verified
from simulators.checkout import callbacks
from tests.billing.e2e import gateways
from tests.billing.e2e.gateways import Request
from tests.conftest import HTTP, SECRETS, Served, counted, gather_limited


def rows(database_url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]


async def send_all(base: str, requests: list[Request]) -> list[httpx.Response]:
    async with httpx.AsyncClient(
        timeout=30, limits=httpx.Limits(max_connections=64), verify=verified()
    ) as client:
        return await gather_limited([r.send_async(client, base) for r in requests])


def invoice(billing: Served, database_url: str, gateway: str, user: int = 1001) -> str:
    channel = gateways.add_paid_channel(database_url)
    with httpx.Client(verify=verified()) as client:
        return str(
            gateways.create_invoice(client, billing.url, user, channel, gateway)["order_reference"]
        )


def extensions(database_url: str) -> int:
    return int(
        rows(database_url, "SELECT count(*) FROM membership_events WHERE cause = 'payment'")[0][0]
    )


def deliveries(billing: Served, gateway: str) -> dict[str, float]:
    """billing's count of this gateway's webhook deliveries, by outcome."""
    return counted(billing.url, "billing_webhook_deliveries_total", "outcome", gateway=gateway)


@pytest.mark.parametrize("gateway", ["subgate", "wayforpay", "stripe"])
def test_ten_identical_deliveries_at_once__one_payment_one_extension(
    billing: Served, database_url: str, gateway: str
) -> None:
    order = invoice(billing, database_url, gateway)
    # billing runs in this process: its counters hold earlier tests' deliveries too.
    before = deliveries(billing, gateway)
    if gateway == "subgate":
        request = gateways.subgate(order, "pay_1", "12.50")
    elif gateway == "wayforpay":
        request = gateways.wayforpay(order, "12.50")
    else:
        request = gateways.stripe(order, "pi_1", 1250)
    responses = asyncio.run(send_all(billing.url, [request] * 10))
    assert [r.status_code for r in responses] == [200] * 10
    assert rows(database_url, "SELECT count(*) FROM payments") == [(1,)]
    assert extensions(database_url) == 1
    assert rows(database_url, "SELECT count(*) FROM access_events WHERE kind = 'grant'") == [(1,)]
    outcomes = rows(
        database_url, "SELECT outcome, count(*) FROM gateway_events GROUP BY 1 ORDER BY 1"
    )
    assert outcomes == [("applied", 1), ("duplicate", 9)]
    after = deliveries(billing, gateway)
    counted = {outcome: n - before.get(outcome, 0.0) for outcome, n in after.items()}
    assert {outcome: n for outcome, n in counted.items() if n} == {
        "applied": 1.0,
        "duplicate": 9.0,
    }
    if gateway == "wayforpay":
        assert all(r.json()["status"] == "accept" for r in responses)
    else:
        answers = [r.json() for r in responses]
        assert sorted(a["duplicate"] for a in answers) == [False] + [True] * 9
        first = next(a for a in answers if not a["duplicate"])
        assert first["applied"] is True
        assert first["membership"]["status"] == "active"
        assert len({a["membership"]["expires_at"] for a in answers}) == 1


def test_stripe__checkout_and_intent_events_count_once(billing: Served, database_url: str) -> None:
    order = invoice(billing, database_url, "stripe")
    with httpx.Client(verify=verified()) as client:
        first = gateways.stripe(order, "pi_9", 1250, kind="checkout.session.completed")
        second = gateways.stripe(order, "pi_9", 1250, kind="payment_intent.succeeded")
        a = first.send(client, billing.url).json()
        b = second.send(client, billing.url).json()
    assert (a["duplicate"], a["applied"]) == (False, True)
    assert (b["duplicate"], b["applied"]) == (True, False)
    assert extensions(database_url) == 1


def test_amount_mismatch__kept_not_applied(billing: Served, database_url: str) -> None:
    order = invoice(billing, database_url, "subgate")
    with httpx.Client(verify=verified()) as client:
        answer = gateways.subgate(order, "pay_low", "1.00").send(client, billing.url)
        wrong_currency = gateways.subgate(order, "pay_eur", "12.50", "EUR").send(
            client, billing.url
        )
    assert answer.status_code == 200
    assert answer.json()["applied"] is False
    assert wrong_currency.json()["applied"] is False
    assert rows(database_url, "SELECT applied, flag FROM payments ORDER BY id") == [
        (False, "amount_mismatch"),
        (False, "amount_mismatch"),
    ]
    assert extensions(database_url) == 0
    assert rows(database_url, "SELECT status FROM invoices") == [("open",)]
    assert rows(database_url, "SELECT DISTINCT outcome FROM gateway_events") == [
        ("amount_mismatch",)
    ]


def test_payment_through_another_gateway__recorded_not_applied(
    billing: Served, database_url: str
) -> None:
    order = invoice(billing, database_url, "subgate")
    with httpx.Client(verify=verified()) as client:
        answer = gateways.stripe(order, "pi_other", 1250).send(client, billing.url)
        again = gateways.stripe(order, "pi_other", 1250).send(client, billing.url)
    assert (answer.status_code, again.status_code) == (200, 200)
    assert answer.json()["applied"] is False
    assert "subgate" in answer.json()["reason"]
    assert rows(database_url, "SELECT count(*) FROM payments") == [(0,)]
    assert extensions(database_url) == 0
    assert rows(database_url, "SELECT status FROM invoices") == [("open",)]
    assert rows(database_url, "SELECT outcome, gateway FROM gateway_events") == [
        ("gateway_mismatch", "stripe"),
        ("gateway_mismatch", "stripe"),
    ]


def test_same_payment_id_different_fields__conflict(
    billing: Served, caplog: pytest.LogCaptureFixture, database_url: str
) -> None:
    caplog.set_level(logging.INFO)
    channel = gateways.add_paid_channel(database_url)
    with httpx.Client(verify=verified()) as client:
        one = gateways.create_invoice(client, billing.url, 1, channel, "subgate")
        two = gateways.create_invoice(client, billing.url, 2, channel, "subgate")
        gateways.subgate(one["order_reference"], "pay_x", "12.50").send(client, billing.url)
        again = gateways.subgate(two["order_reference"], "pay_x", "12.50").send(client, billing.url)
    assert again.status_code == 200
    assert again.json()["duplicate"] is True
    assert again.json()["applied"] is False
    assert rows(database_url, "SELECT outcome FROM gateway_events ORDER BY id") == [
        ("applied",),
        ("conflict",),
    ]
    assert extensions(database_url) == 1
    assert "redelivered with different business fields" in caplog.text


def test_second_distinct_payment_for_a_paid_invoice__applied_and_flagged(
    billing: Served, database_url: str
) -> None:
    order = invoice(billing, database_url, "subgate")
    with httpx.Client(verify=verified()) as client:
        gateways.subgate(order, "pay_a", "12.50").send(client, billing.url)
        second = gateways.subgate(order, "pay_b", "12.50").send(client, billing.url).json()
    assert second["applied"] is True
    assert second["reason"] == "invoice_already_paid"
    assert rows(database_url, "SELECT flag FROM payments ORDER BY id") == [
        (None,),
        ("invoice_already_paid",),
    ]
    assert extensions(database_url) == 2


def test_wayforpay__declined_then_approved_applies(billing: Served, database_url: str) -> None:
    order = invoice(billing, database_url, "wayforpay")
    with httpx.Client(verify=verified()) as client:
        declined = gateways.wayforpay(order, "12.50", status="Declined").send(client, billing.url)
        # Redelivered, and a status that may still pay: neither is told twice or at all.
        gateways.wayforpay(order, "12.50", status="Declined").send(client, billing.url)
        gateways.wayforpay(order, "12.50", status="InProcessing").send(client, billing.url)
        approved = gateways.wayforpay(order, "12.50").send(client, billing.url)
    assert declined.json()["status"] == "accept"
    assert approved.json()["status"] == "accept"
    assert rows(database_url, "SELECT outcome FROM gateway_events ORDER BY id") == [
        ("not_success",),
        ("not_success",),
        ("not_success",),
        ("applied",),
    ]
    assert extensions(database_url) == 1
    # The person was told of the decline once, then got their access.
    assert rows(database_url, "SELECT kind, notice_key FROM access_events ORDER BY id") == [
        ("checkout_declined", f"declined:{invoice_id(database_url, order)}:Declined"),
        ("grant", None),
    ]


def test_stripe__a_failed_checkout_is_told_once_and_a_pending_one_not_at_all(
    billing: Served, database_url: str
) -> None:
    order = invoice(billing, database_url, "stripe")
    failed = "checkout.session.async_payment_failed"
    with httpx.Client(verify=verified()) as client:
        for kind in ("checkout.session.completed", failed, failed):
            # `completed` with `unpaid` is an async payment still on its way.
            sent = callbacks.stripe(
                SECRETS["STRIPE_WEBHOOK_SECRET"],
                order,
                "pi_1",
                1250,
                kind=kind,
                payment_status="unpaid",
            ).send(client, billing.url)
            assert sent.status_code == 200, sent.text
    assert rows(database_url, "SELECT kind, notice_key FROM access_events") == [
        ("checkout_declined", f"declined:{invoice_id(database_url, order)}:{failed}"),
    ]


def invoice_id(database_url: str, order: str) -> int:
    return int(
        rows(database_url, "SELECT id FROM invoices WHERE order_reference = %s", order)[0][0]
    )


def test_unknown_order_reference__2xx_and_orphan(billing: Served, database_url: str) -> None:
    with httpx.Client(verify=verified()) as client:
        answer = gateways.subgate("gh_nobody", "pay_o", "12.50").send(client, billing.url)
    assert answer.status_code == 200
    assert answer.json() == {
        "duplicate": False,
        "applied": False,
        "reason": "unknown order reference",
        "membership": None,
    }
    assert rows(database_url, "SELECT outcome, order_reference FROM gateway_events") == [
        ("orphan", "gh_nobody")
    ]
    assert rows(database_url, "SELECT count(*) FROM payments") == [(0,)]


def test_extension_rule__from_later_of_expiry_and_payment(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url, period_days=30)
    future = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(days=10)
    gateways.set_membership(database_url, 77, channel, future)
    with httpx.Client(verify=verified()) as client:
        order = gateways.create_invoice(client, billing.url, 77, channel, "subgate")
        answer = gateways.subgate(order["order_reference"], "p", "12.50").send(client, billing.url)
    expires = dt.datetime.fromisoformat(answer.json()["membership"]["expires_at"])
    assert expires == future + dt.timedelta(days=30)


def test_invoice_endpoint__answers_and_guards(billing: Served, database_url: str) -> None:
    channel = gateways.add_paid_channel(database_url, price_minor=500, currency="JPY")
    with httpx.Client(verify=verified()) as client:
        created = gateways.create_invoice(client, billing.url, 5, channel, "wayforpay")
        url = f"{billing.url}/internal/invoices"
        body = {"telegram_user_id": 5, "channel_id": channel, "gateway": "subgate"}
        no_token = client.post(url, json=body)
        wrong = client.post(url, json=body, headers={"Authorization": "Bearer wrong-token-123"})
        unknown = client.post(
            url,
            json={**body, "channel_id": 999},
            headers=gateways.sweep_request(gateways.SECRETS["SERVICE_TOKEN"]),
        )
    assert created["amount"] == "500"
    assert created["currency"] == "JPY"
    assert created["order_reference"] in created["pay_url"]
    assert (no_token.status_code, wrong.status_code, unknown.status_code) == (401, 401, 404)


@pytest.mark.parametrize(
    "overrides",
    [
        {"telegram_user_id": 2**63},
        {"telegram_user_id": 0},
        {"channel_id": 2**31},
        {"channel_id": 2**64},
        {"channel_id": -1},
    ],
)
def test_invoice_endpoint__ids_out_of_range_422(
    billing: Served, database_url: str, overrides: dict[str, int]
) -> None:
    body = {"telegram_user_id": 5, "channel_id": 1, "gateway": "subgate", **overrides}
    response = HTTP.post(
        f"{billing.url}/internal/invoices",
        json=body,
        headers=gateways.sweep_request(gateways.SECRETS["SERVICE_TOKEN"]),
    )
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert rows(database_url, "SELECT count(*) FROM invoices") == [(0,)]
