"""The TRX rate chain, against each source's own answer shape (httpx.MockTransport)."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import httpx
import pytest

from billing.rates import Rate, Rates, RateUnavailable, Source, parse_sources
from billing.settings import read
from shared.clock import ManualClock
from shared.settings import Reader, SettingsError
from tests.conftest import SECRETS

ANSWERS = {
    "coingecko.test": {"tron": {"usd": 0.2475}},
    "kraken.test": {"error": [], "result": {"TRXUSD": {"c": ["0.2480", "12.5"]}}},
    "binance.test": {"symbol": "TRXUSDT", "price": "0.24850000"},
}
CHAIN = parse_sources(
    "coingecko=https://coingecko.test,kraken=https://kraken.test,binance=https://binance.test"
)


def ask(down: set[str], clock: ManualClock, times: int = 1) -> tuple[list[Rate], list[str]]:
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.host)
        if request.url.host in down:
            return httpx.Response(503, text="<html>down</html>")
        return httpx.Response(200, json=ANSWERS[request.url.host])

    async def run() -> list[Rate]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            rates = Rates(client, CHAIN, clock)
            found = []
            for _ in range(times):
                found.append(await rates.rate())
                clock.advance(100)
            return found

    return asyncio.run(run()), asked


def test_first_source_answers__its_exact_rate() -> None:
    [rate], asked = ask(set(), ManualClock())
    assert (rate.usdt_per_trx, rate.source) == (Decimal("0.2475"), "coingecko")
    assert asked == ["coingecko.test"]


def test_first_down__the_second_and_its_name() -> None:
    [rate], asked = ask({"coingecko.test"}, ManualClock())
    assert (rate.usdt_per_trx, rate.source) == (Decimal("0.2480"), "kraken")
    assert asked == ["coingecko.test", "kraken.test"]


def test_all_down__unavailable() -> None:
    with pytest.raises(RateUnavailable):
        ask({"coingecko.test", "kraken.test", "binance.test"}, ManualClock())


def test_a_source_failing_ten_times__its_breaker_opens_and_it_is_not_asked_till_the_probe() -> None:
    clock = ManualClock()
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.host)
        return httpx.Response(502 if request.url.host == "coingecko.test" else 429)

    async def run() -> int:
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            rates = Rates(client, CHAIN, clock)
            refused = 0
            for _ in range(12):
                with pytest.raises(RateUnavailable):
                    await rates.rate()
                refused += 1
            clock.advance(5)
            with pytest.raises(RateUnavailable):
                await rates.rate()
            return refused

    assert asyncio.run(run()) == 12
    # coingecko's 502s: ten asked, then skipped until its probe; the others' 429s are them
    # answering (asking for quiet), which never opens a breaker.
    assert asked.count("coingecko.test") == 11
    assert asked.count("kraken.test") == asked.count("binance.test") == 13


def test_kept_five_minutes__then_asked_again() -> None:
    # Asked at 0 s, 100 s, 200 s, 300 s: the cache serves the middle two.
    rates, asked = ask(set(), ManualClock(), times=4)
    assert len({r.at for r in rates}) == 2
    assert asked == ["coingecko.test", "coingecko.test"]


def test_sources_setting__names_and_mirrors_checked() -> None:
    base = {**SECRETS, "DATABASE_URL": "postgresql://u@h/db"}
    assert read(Reader(base)).trx_rate_sources == (
        Source("coingecko", "https://api.coingecko.com"),
        Source("kraken", "https://api.kraken.com"),
        Source("binance", "https://api.binance.com"),
    )
    for bad in ("coinbase", "kraken=ftp://x", "kraken,,binance"):
        with pytest.raises(SettingsError) as error:
            read(Reader({**base, "TRX_RATE_SOURCES": bad}))
        assert error.value.variable == "TRX_RATE_SOURCES"
    with pytest.raises(SettingsError) as error:
        read(Reader({**base, "TRON_USDT_CONTRACT": "T123"}))
    assert error.value.variable == "TRON_USDT_CONTRACT"
