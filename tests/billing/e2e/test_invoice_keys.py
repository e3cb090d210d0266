"""An invoice asked for under a request key is made once: asked again (its answer lost to a
timeout), or by twenty requests at once, billing answers the first invoice; the key named with
another person, channel or gateway is refused and writes nothing."""

from __future__ import annotations

import asyncio

import httpx

from shared.tls import verified
from tests.billing.e2e import gateways
from tests.billing.e2e.test_coupons import SERVICE, add_coupon, invoice, rows
from tests.conftest import Served, gather_limited


def test_request_key__asked_again_answers_the_same_invoice_and_its_coupon_use_once(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url, price_minor=1250)
    add_coupon(database_url, "ONCE", per_person=1)
    first = invoice(billing, channel, coupon="once", request_key="botedge:41")
    again = invoice(billing, channel, coupon="once", request_key="botedge:41")
    assert (first.status_code, again.status_code) == (201, 201), again.text
    assert again.json() == first.json()
    assert first.json()["amount"] == "10.00"
    assert rows(database_url, "SELECT request_key FROM invoices") == [("botedge:41",)]
    assert rows(database_url, "SELECT count(*) FROM coupon_redemptions") == [(1,)]
    # Without a key, or under another, a new one (the coupon is this person's once).
    assert invoice(billing, channel, request_key="botedge:42").status_code == 201
    assert invoice(billing, channel).status_code == 201
    assert rows(database_url, "SELECT count(*) FROM invoices") == [(3,)]


def test_request_key__twenty_at_once_under_one_key_make_one_invoice(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url)

    async def race() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30, verify=verified()) as client:
            body = {
                "telegram_user_id": 7,
                "channel_id": channel,
                "gateway": "subgate",
                "request_key": "botedge:7",
            }
            calls = [
                client.post(f"{billing.url}/internal/invoices", json=body, headers=SERVICE)
                for _ in range(20)
            ]
            return await gather_limited(calls)

    answers = asyncio.run(race())
    assert [a.status_code for a in answers] == [201] * 20
    assert len({a.json()["order_reference"] for a in answers}) == 1
    assert rows(database_url, "SELECT count(*) FROM invoices") == [(1,)]


def test_request_key__reused_elsewhere_or_malformed_is_refused_and_writes_nothing(
    billing: Served, database_url: str
) -> None:
    channel = gateways.add_paid_channel(database_url)
    other = gateways.add_paid_channel(database_url, chat_id=-1001000000777)
    assert invoice(billing, channel, request_key="k1").status_code == 201
    for refused in (
        invoice(billing, channel, user=8, request_key="k1"),
        invoice(billing, other, request_key="k1"),
        invoice(billing, channel, request_key="k1", gateway="wayforpay"),
    ):
        assert refused.status_code == 422, refused.text
        assert refused.json()["type"] == "/problems/request-key-reused"
    for bad in ("", "has space", "x" * 65, "ü"):
        answer = invoice(billing, channel, request_key=bad)
        assert answer.status_code == 422, bad
        assert answer.json()["errors"] == [{"field": "request_key", "code": "bad-format"}], bad
    assert rows(database_url, "SELECT count(*) FROM invoices") == [(1,)]
