"""Invoices in Telegram Stars: priced from the channel's plan in XTR, refused where Stars do not
sell, and the pre-checkout's answer for each case."""

from __future__ import annotations

from typing import Any

from tests.billing.e2e import gateways
from tests.billing.e2e.test_plans import add_plan, count, invoice
from tests.conftest import HTTP, SECRETS, Served

SERVICE = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}


def pre_checkout(billing: Served, **body: Any) -> Any:
    answer = HTTP.post(
        f"{billing.url}/internal/stars/pre-checkout",
        json={"currency": "XTR", **body},
        headers=SERVICE,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_invoice__stars_without_a_plan_take_the_channels_plan_in_stars(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url, price_minor=500, currency="USD")
    stars = add_plan(
        database_url, channel, name="In Stars", price_minor=250, currency="XTR", period_days=30
    )
    made = invoice(billing, telegram_user_id=51, channel_id=channel, gateway="telegram_stars")
    assert made.status_code == 201, made.text
    body = made.json()
    assert (body["plan_id"], body["amount"], body["currency"], body["pay_url"]) == (
        stars,
        "250",
        "XTR",
        None,
    )
    # Card gateways do not sell a plan in Stars, nor Stars a plan in dollars.
    card = invoice(
        billing, telegram_user_id=51, channel_id=channel, gateway="subgate", plan_id=stars
    )
    dollars = invoice(
        billing,
        telegram_user_id=51,
        channel_id=channel,
        gateway="telegram_stars",
        plan_id=stars - 1,
    )
    assert [(r.status_code, r.json()["type"]) for r in (card, dollars)] == [
        (422, "/problems/invalid-values"),
        (422, "/problems/invalid-values"),
    ]
    # The person's invoice at its price passes the pre-checkout; anyone else's or another
    # amount does not.
    reference = body["order_reference"]
    assert pre_checkout(
        billing, telegram_user_id=51, invoice_payload=reference, total_amount=250
    ) == {"ok": True}
    assert pre_checkout(
        billing, telegram_user_id=52, invoice_payload=reference, total_amount=250
    ) == {"ok": False, "reason": "not-yours"}
    assert pre_checkout(
        billing, telegram_user_id=51, invoice_payload=reference, total_amount=25
    ) == {"ok": False, "reason": "amount"}


def test_invoice__stars_for_a_channel_with_no_plan_in_stars_is_refused_and_writes_nothing(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url, price_minor=500, currency="USD")
    refused = invoice(billing, telegram_user_id=53, channel_id=channel, gateway="telegram_stars")
    assert refused.status_code == 422
    assert refused.json()["type"] == "/problems/invalid-values"
    assert count(database_url, "SELECT count(*) FROM invoices") == 0
