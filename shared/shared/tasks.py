"""Background tasks whose failures are heard: asyncio reports a task's exception only when the
task is collected ("Task exception was never retrieved", with no word of what it was doing),
so every task a service starts gets `retrieve` as a done callback, which logs it at once with
what it was for."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any


def retrieve(log: logging.Logger, what: str) -> Callable[[asyncio.Future[Any]], None]:
    """A done callback that takes a finished task's exception and logs it with `what` (the
    bot and update it was handling, say); a cancelled task is no failure."""

    def done(task: asyncio.Future[Any]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error("%s failed: %r", what, error, exc_info=error)

    return done
