"""Billing's work beside its HTTP answers, in every billing process: the TRON verifier's loop,
the Stars ledger's loop (woken by botedge's NOTIFY), and the client the TRX rate sources are
asked with."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from billing.rates import Rates
from billing.reconcile import Botedge
from billing.settings import BillingSettings
from billing.stars import StarsLedger
from billing.tron_verifier import TronVerifier
from billing.trongrid import TronGrid
from shared.breaker import Breakers
from shared.clock import Clock
from shared.listen import Listener
from shared.tls import verified
from shared.web import Runtime

log = logging.getLogger("billing.background")

# botedge's NOTIFY after it records a Stars payment.
STARS_CHANNEL = "telegram_payments"


class Background:
    def __init__(self, settings: BillingSettings, clock: Clock, breakers: Breakers) -> None:
        self.settings = settings
        self.clock = clock
        self.breakers = breakers
        self.rate_client = httpx.AsyncClient(verify=verified())
        self.rates = Rates(self.rate_client, settings.trx_rate_sources, clock, breakers)
        # For reconciliation's questions about the channels' members.
        self.internal_client = httpx.AsyncClient(verify=verified())
        self.botedge = Botedge(
            self.internal_client, settings.botedge_url, settings.service_token, breakers
        )

    @asynccontextmanager
    async def lifespan(self, state: Runtime) -> AsyncIterator[None]:
        settings = self.settings
        stopping = asyncio.Event()
        async with (
            httpx.AsyncClient(verify=verified()) as http,
            self.rate_client,
            self.internal_client,
        ):
            tron = TronVerifier(
                state.pool,
                TronGrid(http, settings.trongrid_url, settings.trongrid_api_key, self.breakers),
                clock=self.clock,
                usdt_contract=settings.tron_usdt_contract,
                interval=settings.tron_check_interval,
            )
            listener = Listener(settings.common.database_url.reveal(), (STARS_CHANNEL,))
            listener.start()
            stars = StarsLedger(state.pool, clock=self.clock)
            loop = asyncio.get_running_loop()
            tasks = {
                "the TRON verifier": loop.create_task(tron.run(stopping)),
                "the Stars ledger": loop.create_task(
                    stars.run(stopping, listener.event(STARS_CHANNEL))
                ),
            }
            try:
                yield None
            finally:
                stopping.set()
                for name, task in tasks.items():
                    try:
                        await asyncio.wait_for(task, settings.common.shutdown_timeout)
                    except TimeoutError:
                        log.warning("%s did not stop in time", name)
                await listener.stop()
