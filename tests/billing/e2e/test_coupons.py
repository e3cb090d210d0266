"""Coupons at invoice time over real HTTP: the invoice records the price, the discount and the
coupon, and asks the discounted amount; the total limit holds under concurrent redemptions and
the per-person one by its key; a refused coupon writes nothing; an invoice that expires unpaid
gives its use back."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import httpx
import psycopg

from shared.tls import verified
from tests.billing.e2e import gateways
from tests.conftest import HTTP, SECRETS, Served, gather_limited

SERVICE = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}


def add_coupon(database_url: str, code: str, **values: Any) -> int:
    coupon = {"code": code, "percent_off": 20, "created_at": dt.datetime.now(dt.UTC)}
    return gateways.insert_row(database_url, "coupons", {**coupon, **values})


def invoice(billing: Served, channel: int, user: int = 7, **more: Any) -> httpx.Response:
    body = {"telegram_user_id": user, "channel_id": channel, "gateway": "subgate", **more}
    return HTTP.post(f"{billing.url}/internal/invoices", json=body, headers=SERVICE)


def rows(database_url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]


def test_coupon__the_discounted_amount_is_asked_and_paid_and_the_invoice_records_it(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url, price_minor=1250)
    coupon = add_coupon(database_url, "Spring-20")
    made = invoice(billing, channel, coupon="spring-20")
    assert made.status_code == 201, made.text
    answer = made.json()
    assert (answer["amount"], answer["list_price"], answer["discount"]) == (
        "10.00",
        "12.50",
        "2.50",
    )
    assert rows(
        database_url,
        "SELECT amount_minor, list_price_minor, discount_minor, coupon_id FROM invoices",
    ) == [(1000, 1250, 250, coupon)]
    # The gateway is paid the discounted amount, which billing's amount check compares.
    paid = gateways.subgate(answer["order_reference"], "pay_c1", "10.00").send(HTTP, billing.url)
    assert paid.status_code == 200, paid.text
    assert rows(database_url, "SELECT amount_minor FROM payments") == [(1000,)]
    assert rows(database_url, "SELECT status FROM memberships") == [("active",)]
    # A fixed amount off, in the plan's currency, and never below one minor unit.
    add_coupon(database_url, "BIG", percent_off=None, amount_off_minor=99999, currency="USD")
    assert invoice(billing, channel, user=8, coupon="big").json()["amount"] == "0.01"


def test_coupon__refusals_by_their_codes_and_nothing_written(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url)
    [(plan,)] = rows(database_url, "SELECT id FROM plans")
    now = dt.datetime.now(dt.UTC)
    add_coupon(database_url, "OLD", expires_at=now - dt.timedelta(minutes=1))
    add_coupon(database_url, "OFF", active=False)
    add_coupon(database_url, "OTHER", plan_ids=[plan + 1])
    add_coupon(database_url, "EURO", percent_off=None, amount_off_minor=100, currency="EUR")
    add_coupon(database_url, "LAPSED", customers="lapsed")
    for code, field_code in (
        ("NOPE", "not-found"),
        ("OFF", "not-found"),
        ("OLD", "out-of-range"),
        ("OTHER", "not-one-of"),
        ("EURO", "not-one-of"),
        ("LAPSED", "invalid"),
    ):
        refused = invoice(billing, channel, coupon=code)
        assert refused.status_code == 422, (code, refused.text)
        problem = refused.json()
        assert problem["type"] == "/problems/coupon-refused"
        assert problem["errors"] == [{"field": "coupon", "code": field_code}], code
    assert rows(database_url, "SELECT count(*) FROM invoices") == [(0,)]
    assert rows(database_url, "SELECT count(*) FROM coupon_redemptions") == [(0,)]
    assert rows(database_url, "SELECT count(*) FROM people") == [(0,)]


def test_coupon__twenty_people_at_once_for_five_uses_five_get_it(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url)
    add_coupon(database_url, "FIVE", max_redemptions=5)

    async def race() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30, verify=verified()) as client:
            body = {"channel_id": channel, "gateway": "subgate", "coupon": "FIVE"}
            calls = [
                client.post(
                    f"{billing.url}/internal/invoices",
                    json={**body, "telegram_user_id": 9000 + n},
                    headers=SERVICE,
                )
                for n in range(20)
            ]
            return await gather_limited(calls)

    answers = asyncio.run(race())
    assert sorted(a.status_code for a in answers) == [201] * 5 + [422] * 15
    refused = [a.json()["errors"] for a in answers if a.status_code == 422]
    assert all(e == [{"field": "coupon", "code": "taken"}] for e in refused)
    assert rows(database_url, "SELECT count(*) FROM coupon_redemptions") == [(5,)]
    assert rows(database_url, "SELECT count(*) FROM invoices") == [(5,)]


def test_coupon__one_use_a_person_until_their_unpaid_invoice_expires(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url)
    add_coupon(database_url, "ONCE")
    assert invoice(billing, channel, coupon="ONCE").status_code == 201
    again = invoice(billing, channel, coupon="ONCE")
    assert again.json()["errors"] == [{"field": "coupon", "code": "taken"}]
    assert invoice(billing, channel, user=8, coupon="ONCE").status_code == 201
    # The first invoice is left unpaid past its 24 hours: the sweep expires it and gives the
    # use back.
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "UPDATE invoices SET expires_at = now() - interval '1 minute'"
            " WHERE person_id = (SELECT id FROM people WHERE telegram_user_id = 7)"
        )
    swept = HTTP.post(f"{billing.url}/v1/sweep", headers=gateways.sweep_request())
    assert swept.json()["invoices_expired"] == 1
    assert rows(
        database_url,
        "SELECT p.telegram_user_id, r.released_at IS NOT NULL FROM coupon_redemptions r"
        " JOIN people p ON p.id = r.person_id ORDER BY r.id",
    ) == [(7, True), (8, False)]
    assert invoice(billing, channel, coupon="ONCE").status_code == 201
