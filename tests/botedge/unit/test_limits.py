"""The sender's in-memory limits, at Telegram's real rates, on a clock the test moves."""

from __future__ import annotations

import asyncio

from botedge.buckets import Bucket
from botedge.sender import Limits
from shared.clock import ManualClock


def test_bucket__burst_then_rate() -> None:
    clock = ManualClock()
    bucket = Bucket(capacity=3, rate=10, clock=clock)
    for _ in range(3):
        assert bucket.wait_time() == 0
        bucket.take()
    assert abs(bucket.wait_time() - 0.1) < 1e-9
    clock.advance(0.1)
    assert bucket.wait_time() == 0


def seconds_for(limits: Limits, clock: ManualClock, chat_ids: list[int]) -> float:
    """How long, on the limits' clock, sending to these chats in this order takes."""
    started = clock.monotonic()

    async def run() -> None:
        for chat in chat_ids:
            await limits.acquire(chat)

    asyncio.run(run())
    return clock.monotonic() - started


def test_private_chat__about_one_a_second_after_a_small_burst() -> None:
    clock = ManualClock()
    elapsed = seconds_for(Limits(clock=clock), clock, [1] * 7)
    # Two at once, then five more at one a second.
    assert abs(elapsed - 5.0) < 1e-6


def test_group__twenty_a_minute() -> None:
    clock = ManualClock()
    elapsed = seconds_for(Limits(clock=clock), clock, [-100] * 23)
    # A burst of three, then twenty more at twenty a minute: one a minute's worth.
    assert abs(elapsed - 60.0) < 1e-6


def test_overall__per_bot_cap_across_chats() -> None:
    clock = ManualClock()
    elapsed = seconds_for(Limits(clock=clock), clock, list(range(1, 51)))
    # 25 at once, then 25 more at 25 a second.
    assert abs(elapsed - 1.0) < 1e-6
