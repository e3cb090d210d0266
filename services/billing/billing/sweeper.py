"""`python -m billing sweep [--every N]`: call POST /v1/sweep, for servers without cron.

Each round calls until the answer says `more: false`, so a large backlog is worked through in
bounded calls. With --every it repeats every N seconds until SIGTERM, SIGINT or SIGHUP.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from shared.periodic import run_every
from shared.settings import LOG_LEVELS, Reader, Secret
from shared.tls import verified

log = logging.getLogger("billing.sweeper")

MAX_CALLS_PER_ROUND = 1000


@dataclass(frozen=True)
class SweeperSettings:
    billing_url: str
    sweep_token: Secret
    log_level: str


def load(env: Mapping[str, str]) -> SweeperSettings:
    return read(Reader(env))


def read(r: Reader) -> SweeperSettings:
    return SweeperSettings(
        billing_url=r.url("BILLING_URL", "http://127.0.0.1:8001"),
        sweep_token=r.secret("SWEEP_TOKEN", min_bytes=16),
        log_level=r.choice("LOG_LEVEL", "INFO", LOG_LEVELS),
    )


def sweep_round(client: httpx.Client, settings: SweeperSettings) -> dict[str, int]:
    """Sweep until nothing due is left; totals of what moved."""
    totals = {"calls": 0, "examined": 0, "to_grace": 0, "to_expired": 0}
    for _ in range(MAX_CALLS_PER_ROUND):
        response = client.post(
            f"{settings.billing_url}/v1/sweep",
            headers={"Authorization": f"Bearer {settings.sweep_token.reveal()}"},
        )
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
        totals["calls"] += 1
        for key in ("examined", "to_grace", "to_expired"):
            totals[key] += int(answer[key])
        if not answer["more"]:
            break
    return totals


def run(settings: SweeperSettings, every: float | None) -> int:
    with httpx.Client(timeout=60, verify=verified()) as client:

        def job() -> None:
            totals = sweep_round(client, settings)
            log.info(
                "swept: %d examined, %d to grace, %d to expired in %d calls",
                totals["examined"],
                totals["to_grace"],
                totals["to_expired"],
                totals["calls"],
            )

        return run_every("sweep", job, every, (httpx.HTTPError, KeyError, ValueError))
