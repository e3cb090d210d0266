"""A channel's plans: the offer lists those on sale in the owner's order, each with the
gateways it is sold through; an invoice is priced from the plan asked for, and paying it buys
that plan's period."""

from __future__ import annotations

from typing import Any

import psycopg

from tests.billing.e2e import gateways
from tests.conftest import HTTP, SECRETS, Served

SERVICE = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}


def add_plan(database_url: str, channel: int, **values: Any) -> int:
    plan = {"price_minor": 5000, "currency": "USD", "period_days": 365, "grace_days": 3}
    return gateways.insert_row(database_url, "plans", {"channel_id": channel, **plan, **values})


def invoice(billing: Served, **body: Any) -> Any:
    return HTTP.post(f"{billing.url}/internal/invoices", json=body, headers=SERVICE)


def count(database_url: str, sql: str) -> int:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(sql).fetchone()  # type: ignore[arg-type]
        assert row is not None
        return int(row[0])


def test_offer__plans_on_sale_in_order_each_with_its_gateways_of_those_on(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url, price_minor=500)
    year = add_plan(database_url, channel, name="Year", gateways=["subgate", "nopay"], position=2)
    quarter = add_plan(database_url, channel, name="Quarter", price_minor=1400, period_days=90)
    add_plan(database_url, channel, name="Old", active=False)
    other = gateways.add_paid_channel(database_url, chat_id=-1001000000002)
    add_plan(database_url, other, name="Elsewhere")

    answer = HTTP.get(
        f"{billing.url}/internal/gateways", params={"channel_id": channel}, headers=SERVICE
    ).json()

    offer = answer["offer"]
    # Telegram Stars sell plans in XTR only.
    every = sorted(g for g in answer["gateways"] if g != "telegram_stars")
    assert [(p["name"], p["amount"], p["period_days"], p["gateways"]) for p in offer["plans"]] == [
        ("default", "5.00", 30, every),
        ("Quarter", "14.00", 90, every),
        # A gateway that is not on is kept on the plan but never offered.
        ("Year", "50.00", 365, ["subgate"]),
    ]
    assert [p["id"] for p in offer["plans"]][1:] == [quarter, year]
    # The fields the offer had before plans were listed are the default plan's.
    assert (offer["amount"], offer["period_days"]) == ("5.00", 30)


def test_invoice__at_the_plan_asked_for_and_paying_it_buys_its_period(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url, price_minor=500)
    year = add_plan(database_url, channel, name="Year", gateways=["subgate"])

    made = invoice(billing, telegram_user_id=7, channel_id=channel, gateway="subgate", plan_id=year)
    assert made.status_code == 201, made.text
    assert (made.json()["amount"], made.json()["plan_id"]) == ("50.00", year)
    order = made.json()["order_reference"]
    paid = gateways.subgate(order, "pay_year", "50.00").send(HTTP, billing.url)
    assert paid.status_code == 200, paid.text

    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT i.plan_id, i.amount_minor, i.period_days,"
            "       m.expires_at - p.paid_at AS bought"
            "  FROM invoices i JOIN payments p ON p.invoice_id = i.id"
            "  JOIN memberships m ON m.channel_id = i.channel_id AND m.person_id = i.person_id"
            " WHERE i.order_reference = %s",
            (order,),
        ).fetchone()
    assert row is not None
    assert row[:3] == (year, 5000, 365)
    assert row[3].days == 365
    # Without a plan: the default, as before plans were listed.
    default = invoice(billing, telegram_user_id=7, channel_id=channel, gateway="wayforpay")
    assert default.json()["amount"] == "5.00"


def test_invoice__a_plan_not_on_sale_there_or_a_gateway_it_is_not_sold_through_writes_nothing(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url)
    year = add_plan(database_url, channel, name="Year", gateways=["subgate"])
    old = add_plan(database_url, channel, name="Old", active=False)
    other = gateways.add_paid_channel(database_url, chat_id=-1001000000002)
    elsewhere = add_plan(database_url, other, name="Elsewhere")
    ask = {"telegram_user_id": 7, "channel_id": channel, "gateway": "subgate"}

    for plan in (old, elsewhere, 2**31 - 1):
        refused = invoice(billing, **ask, plan_id=plan)
        assert refused.status_code == 404, plan
        assert refused.json()["type"] == "/problems/unknown-plan"
    not_offered = invoice(billing, **{**ask, "gateway": "wayforpay"}, plan_id=year)
    assert not_offered.status_code == 422
    assert not_offered.json()["type"] == "/problems/gateway-not-offered"
    for bad in (0, -1, 2**31, "1"):
        assert invoice(billing, **ask, plan_id=bad).status_code == 422, bad
    assert count(database_url, "SELECT count(*) FROM invoices") == 0
    assert count(database_url, "SELECT count(*) FROM people") == 0
