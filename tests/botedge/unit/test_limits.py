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


async def _acquire_all(limits: Limits, calls: list[tuple[int, str]]) -> None:
    for chat, method in calls:
        await limits.acquire(chat, method)


def seconds_for_calls(limits: Limits, clock: ManualClock, calls: list[tuple[int, str]]) -> float:
    started = clock.monotonic()
    asyncio.run(_acquire_all(limits, calls))
    return clock.monotonic() - started


def test_answers_and_removals__spend_only_the_bots_overall_rate() -> None:
    clock = ManualClock()
    limits = Limits(clock=clock)
    calls = [
        (1, "answerCallbackQuery"),
        (1, "answerCallbackQuery"),
        (1, "answerCallbackQuery"),
        (-100, "banChatMember"),
        (-100, "unbanChatMember"),
        (-100, "createChatInviteLink"),
        (-100, "approveChatJoinRequest"),
        (-100, "declineChatJoinRequest"),
        (1, "answerPreCheckoutQuery"),
    ]
    # Nine calls, within the bot's burst of 25: none waits on a chat's bucket.
    assert seconds_for_calls(limits, clock, calls * 2) == 0.0
    # The person's and the channel's buckets are untouched: a message goes at once to each.
    assert limits.chat(1).wait_time() == 0.0
    assert limits.chat(-100).wait_time() == 0.0


def test_messages_and_edits__spend_the_chats_bucket() -> None:
    clock = ManualClock()
    calls = [(1, "sendMessage"), (1, "editMessageText"), (1, "copyMessage"), (1, "sendPhoto")]
    # Two at once, then two more at one a second.
    assert abs(seconds_for_calls(Limits(clock=clock), clock, calls) - 2.0) < 1e-6


def test_non_messages__still_count_against_the_bots_25_a_second() -> None:
    clock = ManualClock()
    elapsed = seconds_for_calls(Limits(clock=clock), clock, [(1, "answerCallbackQuery")] * 50)
    assert abs(elapsed - 1.0) < 1e-6
