"""The simulated TronGrid, read by billing's TronGrid client and judged: the whole path a hash
takes, over real HTTP, without the database."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest
from tronpy.keys import to_base58check_address

from billing.tron_judge import Claim, Credit, Order, Reject, Wait, judge
from billing.trongrid import Lookup, TronGrid, TronGridUnavailable
from shared.testing import serve_in_thread
from shared.tls import verified
from simulators.trongrid.app import DEMO_PAYER, create_app
from tests.conftest import HTTP

SHOP = str(to_base58check_address(bytes([0x41]) + bytes([0x11]) * 20))
PAYER = str(to_base58check_address(bytes([0x41]) + bytes([0x22]) * 20))
APPROVED = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
ORDER = Order(1, SHOP, True, True, APPROVED, Decimal("0.25"))


@pytest.fixture
def sim() -> Iterator[str]:
    with serve_in_thread(create_app()) as url:
        yield url


def pay(sim: str, **body: Any) -> str:
    answer = HTTP.post(f"{sim}/_sim/transactions", json={"from": PAYER, "to": SHOP, **body})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["tx_hash"])


def look(sim: str, tx_hash: str) -> Lookup:
    async def run() -> Lookup:
        async with httpx.AsyncClient(verify=verified()) as client:
            return await TronGrid(client, sim).lookup(tx_hash)

    return asyncio.run(run())


def verdict(sim: str, tx_hash: str, order: Order = ORDER) -> Any:
    found = look(sim, tx_hash)
    return judge(
        found.tx, found.info, found.solid, order, Claim(tx_hash, 0), dt.datetime.now(dt.UTC)
    )


def test_a_transfer_in_form_fields_comes_from_the_wallet_pages_payer(sim: str) -> None:
    """As the README's scripted walk sends it: `curl -d`, with no `from`."""
    answer = HTTP.post(
        f"{sim}/_sim/transactions", data={"kind": "usdt", "to": SHOP, "amount": "10000000"}
    )
    assert answer.status_code == 200, answer.text
    usdt = verdict(sim, str(answer.json()["tx_hash"]))
    assert isinstance(usdt, Credit)
    assert (usdt.coin, usdt.micros, usdt.sender) == ("usdt", 10_000_000, DEMO_PAYER)


def test_usdt_and_trx__credited(sim: str) -> None:
    usdt = verdict(sim, pay(sim, kind="usdt", amount=25_000_000))
    assert isinstance(usdt, Credit) and (usdt.coin, usdt.micros, usdt.sender) == (
        "usdt",
        25_000_000,
        PAYER,
    )
    trx = verdict(sim, pay(sim, kind="trx", amount=40_000_000))
    assert isinstance(trx, Credit) and (trx.coin, trx.amount, trx.micros) == (
        "trx",
        40_000_000,
        10_000_000,
    )


def test_failed_fake_and_elsewhere__refused(sim: str) -> None:
    assert verdict(sim, pay(sim, kind="failed", amount=5)) == Reject("failed", "REVERT")
    fake = verdict(sim, pay(sim, kind="fake_token", amount=5))
    assert isinstance(fake, Reject) and fake.reason == "wrong_token"
    other = str(to_base58check_address(bytes([0x41]) + bytes([0x33]) * 20))
    elsewhere = verdict(sim, pay(sim, kind="usdt", amount=5, to=other))
    assert elsewhere == Reject("wrong_recipient", other)


def test_unknown_and_unsolidified__wait(sim: str) -> None:
    assert verdict(sim, "ef" * 32) == Wait("not_found")
    later = pay(sim, kind="usdt", amount=5, solidify_after_s=3600)
    assert verdict(sim, later) == Wait("not_solidified")


def test_before_approval__refused(sim: str) -> None:
    early = (APPROVED - dt.timedelta(minutes=10)).timestamp()
    refused = verdict(sim, pay(sim, kind="usdt", amount=5, block_time=early))
    assert isinstance(refused, Reject) and refused.reason == "before_approval"


@pytest.mark.parametrize("fault", [{"down": True}, {"rate_429": 1.0}, {"rate_5xx": 1.0}])
def test_trongrid_faults__try_later(sim: str, fault: dict[str, Any]) -> None:
    tx_hash = pay(sim, kind="usdt", amount=5)
    HTTP.post(f"{sim}/_sim/faults", json=fault).raise_for_status()
    with pytest.raises(TronGridUnavailable):
        look(sim, tx_hash)
