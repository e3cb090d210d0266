"""The sender's in-memory limits."""

from __future__ import annotations

import asyncio
import time

from botedge.buckets import Bucket
from botedge.sender import Limits


def test_bucket__burst_then_rate() -> None:
    bucket = Bucket(capacity=3, rate=10)
    for _ in range(3):
        assert bucket.wait_time() == 0
        bucket.take()
    wait = bucket.wait_time()
    assert 0.05 < wait <= 0.1


def sends_in(limits: Limits, chat_ids: list[int]) -> float:
    async def run() -> float:
        started = time.monotonic()
        for chat in chat_ids:
            await limits.acquire(chat)
        return time.monotonic() - started

    return asyncio.run(run())


def test_private_chat__about_one_a_second_after_a_small_burst() -> None:
    elapsed = sends_in(Limits(private_rate=10, private_burst=2), [1] * 5)
    # Two at once, then three more at 10/s.
    assert 0.25 < elapsed < 1.5


def test_group__twenty_a_minute() -> None:
    limits = Limits(group_per_minute=600, group_burst=1)
    assert 0.15 < sends_in(limits, [-100] * 3) < 1.0


def test_overall__per_bot_cap_across_chats() -> None:
    limits = Limits(per_second=20)
    elapsed = sends_in(limits, list(range(1, 41)))
    # 20 at once, then 20 more at 20/s.
    assert 0.85 < elapsed < 3.0
