"""A background task's failure is logged at once with what it was for, and asyncio is left
nothing to report as never retrieved."""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

import pytest

from shared.tasks import retrieve

log = logging.getLogger("tests.tasks")


async def fail() -> None:
    raise RuntimeError("Telegram answered 502")


def test_retrieve__a_failed_task_is_logged_with_its_bot_and_update_and_never_unretrieved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    unretrieved: list[dict[str, Any]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: unretrieved.append(context)
        )
        task = asyncio.get_running_loop().create_task(fail())
        task.add_done_callback(retrieve(log, "bot 7 update 42"))
        await asyncio.wait([task])
        ok = asyncio.get_running_loop().create_task(asyncio.sleep(0))
        ok.add_done_callback(retrieve(log, "bot 7 update 43"))
        cancelled = asyncio.get_running_loop().create_task(asyncio.sleep(10))
        cancelled.add_done_callback(retrieve(log, "bot 7 update 44"))
        cancelled.cancel()
        await asyncio.wait([ok, cancelled])
        del task, ok, cancelled
        gc.collect()

    with caplog.at_level(logging.ERROR, logger="tests.tasks"):
        asyncio.run(main())
    assert [r.getMessage() for r in caplog.records] == [
        "bot 7 update 42 failed: RuntimeError('Telegram answered 502')"
    ]
    assert caplog.records[0].exc_info is not None
    assert unretrieved == []


def test_retrieve__without_it_asyncio_reports_the_failure_only_as_never_retrieved() -> None:
    """The failure `retrieve` prevents, shown: the same task with no callback."""
    unretrieved: list[dict[str, Any]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: unretrieved.append(context)
        )
        task = asyncio.get_running_loop().create_task(fail())
        await asyncio.wait([task])
        del task
        gc.collect()

    asyncio.run(main())
    assert [c["message"] for c in unretrieved] == ["Task exception was never retrieved"]
