"""The TRX price in USDT, from a chain of public sources: the first to answer wins, and its
answer is kept 5 minutes. Locked into an order at approval, so what an advertiser owes in TRX
does not move while they pay.

`TRX_RATE_SOURCES` names the chain: `coingecko,kraken,binance` by default; each entry is a
name, or `name=base URL` (a mirror, or the simulated TronGrid, which answers all three).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import httpx

from shared.breaker import BreakerOpen, Breakers, guarded
from shared.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger("billing.rates")

CACHE_SECONDS = 300.0


@dataclass(frozen=True)
class Source:
    name: str
    base_url: str


@dataclass(frozen=True)
class Rate:
    usdt_per_trx: Decimal
    source: str
    at: dt.datetime


class RateUnavailable(Exception):
    """No source answered."""


def _coingecko(body: Any) -> Any:
    return body["tron"]["usd"]


def _kraken(body: Any) -> Any:
    if body.get("error"):
        raise ValueError(str(body["error"]))
    return next(iter(body["result"].values()))["c"][0]


def _binance(body: Any) -> Any:
    return body["price"]


# name -> (default base URL, path and query, how to read the price)
KNOWN: dict[str, tuple[str, str, Callable[[Any], Any]]] = {
    "coingecko": (
        "https://api.coingecko.com",
        "/api/v3/simple/price?ids=tron&vs_currencies=usd",
        _coingecko,
    ),
    "kraken": ("https://api.kraken.com", "/0/public/Ticker?pair=TRXUSD", _kraken),
    "binance": ("https://api.binance.com", "/api/v3/ticker/price?symbol=TRXUSDT", _binance),
}


def parse_sources(value: str) -> tuple[Source, ...]:
    """`TRX_RATE_SOURCES`; ValueError naming what is wrong."""
    sources = []
    for entry in (part.strip() for part in value.split(",")):
        name, _, url = entry.partition("=")
        name = name.strip()
        if name not in KNOWN:
            raise ValueError(f"unknown rate source {name!r} (known: {', '.join(KNOWN)})")
        url = url.strip() or KNOWN[name][0]
        if not url.startswith(("https://", "http://")):
            raise ValueError(f"{name}: the base URL must be http(s)")
        sources.append(Source(name, url.rstrip("/")))
    if not sources:
        raise ValueError("needs at least one source")
    return tuple(sources)


def _failing(response: httpx.Response) -> bool:
    """A source failing: a 5xx, or a 2xx that is not JSON. A 4xx (429 too) is it answering."""
    if response.status_code >= 500:
        return True
    if not response.is_success:
        return False
    try:
        response.json()
    except ValueError:
        return True
    return False


class Rates:
    def __init__(
        self,
        client: httpx.AsyncClient,
        sources: tuple[Source, ...],
        clock: Clock = SYSTEM_CLOCK,
        breakers: Breakers | None = None,
    ) -> None:
        self.client = client
        self.sources = sources
        self.clock = clock
        self._cached: tuple[float, Rate] | None = None
        # One per source: a source failing is skipped, unasked, for the next one.
        breakers = breakers or Breakers()
        self.breakers = {s.name: breakers.get("trx-rate", s.name, clock=clock) for s in sources}

    async def rate(self) -> Rate:
        if self._cached is not None and self.clock.monotonic() < self._cached[0]:
            return self._cached[1]
        for source in self.sources:
            price = await self._ask(source)
            if price is not None:
                rate = Rate(price, source.name, self.clock.now())
                self._cached = (self.clock.monotonic() + CACHE_SECONDS, rate)
                return rate
        raise RateUnavailable("no TRX rate source answered")

    async def _ask(self, source: Source) -> Decimal | None:
        _, path, read = KNOWN[source.name]
        url = source.base_url + path
        try:
            response = await guarded(
                self.breakers[source.name],
                lambda: self.client.get(url, timeout=5.0),
                _failing,
            )
            response.raise_for_status()
            price = Decimal(str(read(response.json())))
        except BreakerOpen:
            log.info("TRX rate source %s is failing; not asked", source.name)
            return None
        except (httpx.HTTPError, ValueError, KeyError, TypeError, StopIteration, InvalidOperation):
            log.warning("TRX rate source %s did not answer", source.name)
            return None
        if not price.is_finite() or price <= 0:
            log.warning("TRX rate source %s answered %s", source.name, price)
            return None
        return price
