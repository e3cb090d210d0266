"""An ad order approved, rejected or cancelled through billing's internal endpoints; the TRX
rate locked from the first source that answers."""

from __future__ import annotations

from typing import Any

import httpx
import psycopg
import pytest

from tests.billing.e2e.test_tron_verifier import SHOP, query
from tests.botedge.conftest import insert_bot
from tests.conftest import (
    HTTP,
    SECRETS,
    Serve,
    Served,
    serve_billing,
    serve_simtrongrid,
)

AUTH = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}


def requested_order(database_url: str, *, trx: bool = True) -> int:
    bot, _, _ = insert_bot(database_url)
    [(person,)] = query(
        database_url, "INSERT INTO people (telegram_user_id) VALUES (5) RETURNING id"
    )
    [(slot,)] = query(
        database_url,
        "INSERT INTO ad_slots (bot_id, kind, title, price_micros, accepts_usdt, accepts_trx)"
        " VALUES (%s, 'broadcast', 'Blast', 10000000, true, %s) RETURNING id",
        bot,
        trx,
    )
    [(order,)] = query(
        database_url,
        "INSERT INTO ad_orders (slot_id, person_id, ad, price_micros, accepts_usdt, accepts_trx)"
        ' VALUES (%s, %s, \'{"text": "buy"}\', 10000000, true, %s) RETURNING id',
        slot,
        person,
        trx,
    )
    return int(order)


@pytest.fixture
def shop(serve: Serve, database_url: str) -> tuple[Served, Served]:
    chain = serve_simtrongrid(serve)
    sources = ",".join(f"{name}={chain.url}" for name in ("coingecko", "kraken", "binance"))
    billing = serve_billing(serve, database_url, TRONGRID_URL=chain.url, TRX_RATE_SOURCES=sources)
    return billing, chain


def step(billing: Served, order: int, what: str) -> httpx.Response:
    return HTTP.post(f"{billing.url}/internal/ad-orders/{order}/{what}", headers=AUTH)


def set_shop_address(database_url: str) -> None:
    query(database_url, "UPDATE workspace SET tron_address = %s RETURNING 1", SHOP)


def ensure_workspace(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        conn.execute("INSERT INTO workspace (name) VALUES ('W') ON CONFLICT DO NOTHING")


def test_approve__locks_the_first_answering_sources_rate(
    shop: tuple[Served, Served], database_url: str
) -> None:
    billing, chain = shop
    ensure_workspace(database_url)
    order = requested_order(database_url)
    # No shop address yet: nothing to pay to.
    refused = step(billing, order, "approve")
    assert (refused.status_code, refused.json()["type"]) == (422, "/problems/invalid-values")
    set_shop_address(database_url)
    HTTP.post(f"{chain.url}/_sim/price", json={"usdt_per_trx": "0.2831", "down": ["coingecko"]})
    approved = step(billing, order, "approve")
    assert approved.status_code == 200, approved.text
    body: dict[str, Any] = approved.json()
    assert (body["status"], body["pay_to"], body["trx_rate"], body["trx_rate_source"]) == (
        "approved",
        SHOP,
        "0.2831",
        "kraken",
    )
    assert query(database_url, "SELECT kind FROM ad_order_events") == [("approved",)]
    again = step(billing, order, "approve")
    assert (again.status_code, again.json()["type"]) == (409, "/problems/conflict")


def test_approve__every_source_down_is_503_and_the_order_unchanged(
    shop: tuple[Served, Served], database_url: str
) -> None:
    billing, chain = shop
    ensure_workspace(database_url)
    set_shop_address(database_url)
    order = requested_order(database_url)
    HTTP.post(f"{chain.url}/_sim/price", json={"down": ["coingecko", "kraken", "binance"]})
    down = step(billing, order, "approve")
    assert (down.status_code, down.json()["type"]) == (503, "/problems/rate-unavailable")
    assert query(database_url, "SELECT status, approved_at FROM ad_orders") == [("requested", None)]
    # A USDT-only order needs no rate.
    usdt_only = requested_order_for_usdt(database_url)
    assert step(billing, usdt_only, "approve").json()["trx_rate"] is None


def requested_order_for_usdt(database_url: str) -> int:
    [(slot,)] = query(database_url, "SELECT id FROM ad_slots LIMIT 1")
    [(person,)] = query(database_url, "SELECT id FROM people LIMIT 1")
    [(order,)] = query(
        database_url,
        "INSERT INTO ad_orders (slot_id, person_id, ad, price_micros, accepts_usdt, accepts_trx)"
        " VALUES (%s, %s, '{}', 10000000, true, false) RETURNING id",
        slot,
        person,
    )
    return int(order)


def test_reject_and_cancel__only_from_their_states(
    shop: tuple[Served, Served], database_url: str
) -> None:
    billing, _ = shop
    ensure_workspace(database_url)
    set_shop_address(database_url)
    first, second = requested_order(database_url), requested_order_for_usdt(database_url)
    assert step(billing, first, "reject").json()["status"] == "rejected"
    assert step(billing, first, "cancel").status_code == 409
    assert step(billing, second, "approve").status_code == 200
    assert step(billing, second, "reject").status_code == 409
    assert step(billing, second, "cancel").json()["status"] == "cancelled"
    assert step(billing, 99999, "approve").status_code == 404
    assert HTTP.post(f"{billing.url}/internal/ad-orders/{first}/cancel").status_code == 401


def test_sweep__expires_unpaid_orders_and_reminds_part_paid_ones_once(
    shop: tuple[Served, Served], database_url: str
) -> None:
    billing, _ = shop
    ensure_workspace(database_url)
    set_shop_address(database_url)
    late = requested_order(database_url, trx=False)
    halfway, closing = (requested_order_for_usdt(database_url) for _ in range(2))
    for order in (late, halfway, closing):
        assert step(billing, order, "approve").status_code == 200
    query(
        database_url,
        "UPDATE ad_orders SET due_at = now() - interval '1 minute' WHERE id = %s RETURNING 1",
        late,
    )
    for order, left in ((halfway, "20 hours"), (closing, "3 hours")):
        query(
            database_url,
            "UPDATE ad_orders SET status = 'part_paid', paid_micros = 4000000,"
            " due_at = now() + %s::interval WHERE id = %s RETURNING 1",
            left,
            order,
        )
    swept = [sweep(billing) for _ in range(2)]
    assert [s["orders_expired"] for s in swept] == [1, 0]
    assert query(database_url, "SELECT status FROM ad_orders WHERE id = %s", late) == [("expired",)]
    events = query(
        database_url,
        "SELECT order_id, kind, cause FROM ad_order_events WHERE kind <> 'approved' ORDER BY id",
    )
    assert sorted(events) == sorted(
        [
            (late, "expired", "deadline"),
            (halfway, "reminder", "reminder:24h"),
            (closing, "reminder", "reminder:4h"),
        ]
    )


def sweep(billing: Served) -> dict[str, Any]:
    answer = HTTP.post(
        f"{billing.url}/v1/sweep", headers={"Authorization": f"Bearer {SECRETS['SWEEP_TOKEN']}"}
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())
