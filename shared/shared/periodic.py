"""Run a job once, or every N seconds until SIGTERM, SIGINT or SIGHUP (for servers without cron)."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable

log = logging.getLogger("shared.periodic")


def run_every(
    name: str,
    job: Callable[[], None],
    every: float | None,
    failures: tuple[type[BaseException], ...],
) -> int:
    """Once: exit 1 if the job failed. Repeating: log failures and go on; exit 0 on a signal."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    while True:
        try:
            job()
        except failures as error:
            log.error("%s failed: %s", name, error)
            if every is None:
                return 1
        if every is None or stop.wait(every):
            return 0
