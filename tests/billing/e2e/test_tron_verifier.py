"""The TRON verifier: hashes submitted for ad orders, checked on the simulated TronGrid by real
billing processes, credited exactly once."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable
from typing import Any

import httpx
import psycopg
import pytest
from tronpy.keys import to_base58check_address

from billing.tron_verifier import TronVerifier
from billing.trongrid import TronGrid
from shared.clock import ManualClock
from shared.db import create_pool
from shared.settings import CommonSettings, Reader
from shared.testing import serve_in_thread
from shared.tls import verified
from tests.botedge.conftest import insert_bot
from tests.conftest import (
    HTTP,
    Serve,
    Served,
    ServiceProcess,
    WrittenDown,
    serve_billing,
    serve_simtrongrid,
    service_env,
    wait_until,
)
from tests.scale import sized

SHOP = str(to_base58check_address(bytes([0x41]) + bytes([0x11]) * 20))
PAYER = str(to_base58check_address(bytes([0x41]) + bytes([0x22]) * 20))
PRICE = 50_000_000  # 50 USDT


def query(database_url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]


def approved_order(database_url: str, user: int = 501) -> int:
    bot = query(database_url, "SELECT id FROM bots")
    bot_id = bot[0][0] if bot else insert_bot(database_url)[0]
    [(person,)] = query(
        database_url,
        "INSERT INTO people (telegram_user_id) VALUES (%s) ON CONFLICT (telegram_user_id)"
        " DO UPDATE SET updated_at = now() RETURNING id",
        user,
    )
    [(slot,)] = query(
        database_url,
        "INSERT INTO ad_slots (bot_id, kind, title, price_micros, accepts_usdt, accepts_trx)"
        " VALUES (%s, 'pinned_post', 'Top', %s, true, true) RETURNING id",
        bot_id,
        PRICE,
    )
    [(order,)] = query(
        database_url,
        "INSERT INTO ad_orders (slot_id, person_id, ad, price_micros, accepts_usdt, accepts_trx,"
        " status, approved_at, pay_to, trx_rate, trx_rate_source, trx_rate_at, due_at)"
        " VALUES (%s, %s, '{}', %s, true, true, 'approved', now() - interval '5 minutes', %s,"
        " 0.25, 'coingecko', now(), now() + interval '24 hours') RETURNING id",
        slot,
        person,
        PRICE,
        SHOP,
    )
    return int(order)


def claim(database_url: str, order: int, tx_hash: str) -> None:
    query(
        database_url,
        "INSERT INTO tron_claims (tx_hash, order_id) VALUES (%s, %s) RETURNING id",
        tx_hash,
        order,
    )


def pay(chain: str, kind: str, amount: int, **extra: Any) -> str:
    answer = HTTP.post(
        f"{chain}/_sim/transactions",
        json={"kind": kind, "from": PAYER, "to": SHOP, "amount": amount, **extra},
    )
    answer.raise_for_status()
    return str(answer.json()["tx_hash"])


@pytest.fixture
def chain(serve: Serve) -> Served:
    return serve_simtrongrid(serve)


def billing_env(database_url: str, chain: Served) -> dict[str, str]:
    return service_env(database_url, TRONGRID_URL=chain.url, TRON_CHECK_INTERVAL="0.2")


def states(database_url: str) -> list[tuple[str, str | None]]:
    return [
        (str(state), reason)
        for state, reason in query(
            database_url, "SELECT state, reason FROM tron_claims ORDER BY id"
        )
    ]


def test_part_payments_in_both_coins__add_up_to_paid(
    serve: Serve, database_url: str, chain: Served
) -> None:
    order = approved_order(database_url)
    serve_billing(serve, database_url, TRONGRID_URL=chain.url, TRON_CHECK_INTERVAL="0.2")
    claim(database_url, order, pay(chain.url, "usdt", 20_000_000))
    wait_until(lambda: states(database_url) == [("credited", None)], 30, "the first part")
    assert query(database_url, "SELECT status, paid_micros FROM ad_orders") == [
        ("part_paid", 20_000_000)
    ]
    # 120 TRX at 0.25 USDT: the other 30 USDT.
    claim(database_url, order, pay(chain.url, "trx", 120_000_000))
    wait_until(lambda: [s for s, _ in states(database_url)] == ["credited"] * 2, 30, "the rest")
    assert query(database_url, "SELECT status, paid_micros, due_at FROM ad_orders") == [
        ("paid", PRICE, None)
    ]
    assert query(
        database_url, "SELECT coin, amount::bigint, micros FROM ad_credits ORDER BY id"
    ) == [
        ("usdt", 20_000_000, 20_000_000),
        ("trx", 120_000_000, 30_000_000),
    ]
    kinds = [k for (k,) in query(database_url, "SELECT kind FROM ad_order_events ORDER BY id")]
    assert kinds == ["credited", "part_paid", "credited", "paid"]


def test_refusals__recorded_with_their_reason_and_an_event(
    serve: Serve, database_url: str, chain: Served
) -> None:
    order = approved_order(database_url)
    serve_billing(serve, database_url, TRONGRID_URL=chain.url, TRON_CHECK_INTERVAL="0.2")
    claim(database_url, order, pay(chain.url, "failed", 5))
    claim(database_url, order, pay(chain.url, "fake_token", 5))
    wait_until(lambda: all(s == "rejected" for s, _ in states(database_url)), 30, "refusals")
    assert states(database_url) == [("rejected", "failed"), ("rejected", "wrong_token")]
    assert query(database_url, "SELECT status, paid_micros FROM ad_orders") == [("approved", 0)]
    assert query(
        database_url, "SELECT count(*) FROM ad_order_events WHERE kind = 'claim_rejected'"
    ) == [(2,)]


def test_one_hash_on_two_orders__the_second_claim_is_refused(database_url: str) -> None:
    first, second = approved_order(database_url, 501), approved_order(database_url, 502)
    claim(database_url, first, "ab" * 32)
    with pytest.raises(psycopg.errors.UniqueViolation):
        claim(database_url, second, "ab" * 32)


def test_two_billing_processes__each_claim_judged_once(
    start_service: Callable[..., ServiceProcess], database_url: str, chain: Served
) -> None:
    orders = [approved_order(database_url, 600 + n) for n in range(12)]
    for order in orders:
        claim(database_url, order, pay(chain.url, "usdt", PRICE))
    for _ in range(2):
        start_service("billing", env=billing_env(database_url, chain))
    wait_until(lambda: all(s == "credited" for s, _ in states(database_url)), 60, "all credited")
    assert query(database_url, "SELECT DISTINCT attempts FROM tron_claims") == [(1,)]
    assert query(database_url, "SELECT count(*) FROM ad_credits") == [(12,)]
    assert query(database_url, "SELECT DISTINCT status FROM ad_orders") == [("paid",)]


@pytest.mark.scaled
@pytest.mark.timeout(600)  # five minutes of outage in `make faults`
def test_trongrid_down__claims_wait_told_once_breaker_opens_none_refused_all_judged_after(
    serve: Serve, database_url: str, chain: Served, written_down: WrittenDown
) -> None:
    claims, outage = sized(3, 10), sized(0.0, 300.0)
    order = approved_order(database_url)
    hashes = [pay(chain.url, "usdt", 10_000_000) for _ in range(claims)]
    HTTP.post(f"{chain.url}/_sim/faults", json={"down": True}).raise_for_status()
    down_at = time.monotonic()
    billing = serve_billing(serve, database_url, TRONGRID_URL=chain.url, TRON_CHECK_INTERVAL="0.2")
    for tx_hash in hashes:
        claim(database_url, order, tx_hash)

    def trongrid() -> list[str]:
        breakers = HTTP.get(f"{billing.url}/readyz").json()["breakers"]
        return [b["state"] for name, b in breakers.items() if name.startswith("trongrid ")]

    # Ten failed lookups in the window open TronGrid's breaker: the rounds stop asking.
    wait_until(lambda: trongrid() == ["open"], 30, "TronGrid's breaker open")
    [(tried, least)] = query(database_url, "SELECT sum(attempts), min(attempts) FROM tron_claims")
    assert least >= 1
    assert tried <= 12
    # The advertiser is told once a claim that it waits, however often it was tried.
    waiting = "SELECT count(*), count(DISTINCT cause) FROM ad_order_events WHERE kind = %s"
    wait_until(
        lambda: query(database_url, waiting, "claim_waiting") == [(claims, claims)],
        10,
        "each advertiser told to wait",
    )
    # The outage runs its length (five minutes in `make faults`); nothing is judged meanwhile.
    time.sleep(max(0.0, outage - (time.monotonic() - down_at)))
    assert {s for s, _ in states(database_url)} <= {"pending", "processing"}
    assert query(database_url, "SELECT max(not_found_seconds) FROM tron_claims") == [(0.0,)]
    [(tried_while_down,)] = query(database_url, "SELECT sum(attempts) FROM tron_claims")
    down_for = time.monotonic() - down_at
    HTTP.post(f"{chain.url}/_sim/faults", json={"down": False}).raise_for_status()
    back_at = time.monotonic()
    # The breaker's cool-off doubles up to 60 s while the outage lasts: its probe comes within.
    wait_until(lambda: all(s == "credited" for s, _ in states(database_url)), 90, "all credited")
    judged_after = time.monotonic() - back_at
    assert trongrid() == []
    assert query(database_url, waiting, "claim_waiting") == [(claims, claims)]
    assert query(database_url, "SELECT count(*) FROM ad_credits") == [(claims,)]
    written_down(
        "TronGrid down",
        f"the simulated TronGrid answered nothing but 503 for {down_for:.0f} s",
        f"{claims} transaction hashes sent for an approved ad order as TronGrid went down",
        {
            "lookups while down": f"{tried_while_down} (the breaker opened after {tried})",
            "claims refused or lost": 0,
            "advertisers told to wait": f"{claims}, once each",
            "claims credited after": f"{claims}, once each",
            "all judged after trongrid came back": f"{judged_after:.1f} s",
        },
    )


def test_not_found__refused_after_15_minutes_of_not_found_on_the_injected_clock(
    database_url: str,
) -> None:
    order = approved_order(database_url)
    claim(database_url, order, "cd" * 32)
    from simulators.trongrid.app import create_app

    async def rounds(chain: str) -> list[str]:
        clock = ManualClock(dt.datetime.now(dt.UTC))
        settings = CommonSettings.read(Reader({"DATABASE_URL": database_url}), "t", 1)
        pool = create_pool(settings)
        await pool.open(wait=True)
        seen = []
        try:
            async with httpx.AsyncClient(verify=verified()) as http:
                verifier = TronVerifier(pool, TronGrid(http, chain), clock=clock, interval=60)
                for _ in range(17):
                    clock.advance(60)
                    await verifier.round()
                    seen.append(states(database_url)[0][0])
        finally:
            await pool.close()
        return seen

    with serve_in_thread(create_app()) as chain:
        seen = asyncio.run(rounds(chain))
    # Fourteen minutes of "not found" and more: waiting; past fifteen: refused.
    assert seen[:14] == ["pending"] * 14
    assert seen[-1] == "rejected"
    assert states(database_url) == [("rejected", "not_found")]


def test_api_key__sent_to_trongrid_and_in_no_log_line_at_debug(
    start_service: Callable[..., ServiceProcess], database_url: str, chain: Served
) -> None:
    key = "tg-" + "9f3c" * 9
    order = approved_order(database_url)
    env = {**billing_env(database_url, chain), "TRONGRID_API_KEY": key, "LOG_LEVEL": "DEBUG"}
    billing = start_service("billing", env=env)
    claim(database_url, order, pay(chain.url, "usdt", PRICE))
    wait_until(lambda: states(database_url) == [("credited", None)], 30, "the claim credited")
    asked = HTTP.get(f"{chain.url}/_sim/requests").json()
    assert asked and all(request["with_key"] for request in asked)
    output = billing.output()
    assert '"level": "DEBUG"' in output
    assert key not in output
