"""Billing's work beside its HTTP answers, in every billing process: the TRON verifier's loop,
and the client the TRX rate sources are asked with."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from billing.rates import Rates
from billing.settings import BillingSettings
from billing.tron_verifier import TronVerifier
from billing.trongrid import TronGrid
from shared.clock import Clock
from shared.web import Runtime

log = logging.getLogger("billing.background")


class Background:
    def __init__(self, settings: BillingSettings, clock: Clock) -> None:
        self.settings = settings
        self.clock = clock
        self.rate_client = httpx.AsyncClient()
        self.rates = Rates(self.rate_client, settings.trx_rate_sources, clock)

    @asynccontextmanager
    async def lifespan(self, state: Runtime) -> AsyncIterator[None]:
        settings = self.settings
        stopping = asyncio.Event()
        async with httpx.AsyncClient() as http, self.rate_client:
            tron = TronVerifier(
                state.pool,
                TronGrid(http, settings.trongrid_url, settings.trongrid_api_key),
                clock=self.clock,
                usdt_contract=settings.tron_usdt_contract,
                interval=settings.tron_check_interval,
            )
            task = asyncio.get_running_loop().create_task(tron.run(stopping))
            try:
                yield None
            finally:
                stopping.set()
                try:
                    await asyncio.wait_for(task, settings.common.shutdown_timeout)
                except TimeoutError:
                    log.warning("the TRON verifier did not stop in time")
