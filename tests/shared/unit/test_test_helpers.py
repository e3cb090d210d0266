"""The suite's own helpers: a failure in one test must not surface in another."""

from __future__ import annotations

import asyncio
import gc
import warnings

import pytest

from tests.conftest import gather_limited


def test_gather_limited__a_failure_leaves_no_unawaited_calls_behind() -> None:
    started: list[int] = []

    async def call(n: int) -> int:
        started.append(n)
        if n == 0:
            raise ValueError("first call fails")
        await asyncio.Event().wait()  # still running when the run ends
        return n

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="first call fails"):
            asyncio.run(gather_limited([call(n) for n in range(50)], limit=1))
        gc.collect()
    # The one running when the run ended was cancelled; the 48 queued behind it never ran, and
    # none of them is reported as a coroutine never awaited.
    assert started == [0, 1]
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


def test_gather_limited__results_in_order_with_bounded_concurrency() -> None:
    running = peak = 0

    async def call(n: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0)
        running -= 1
        return n

    assert asyncio.run(gather_limited([call(n) for n in range(20)], limit=3)) == list(range(20))
    assert peak == 3
