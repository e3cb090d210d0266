"""A worker that dies or stalls hands its bots over in seconds, not when its leases run out,
and two workers never send for one bot at once: the holder stops trusting its leases before
the database lets another take them."""

from __future__ import annotations

import signal
import time
from typing import Any

from tests.botedge.e2e.conftest import Edge
from tests.botedge.e2e.test_gate import gate_setup
from tests.botedge.e2e.test_sending import expected, queue, texts_by_chat, wait_all_recorded
from tests.conftest import ServiceProcess

BOT = 9601
# Sending for long enough that the holder is mid-stream when it dies: 600 messages at 40/s.
SLOW = {"SEND_RATE": "40", "LEASE_SECONDS": "30"}


def sends(edge: Edge) -> list[dict[str, Any]]:
    return [
        c
        for c in edge.sim_get("/_sim/calls", bot_id=BOT, method="sendMessage")
        if c["status"] == 200
    ]


def by(pid: int, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in calls if c["user_agent"] == f"gatehouse-botedge/{pid}"]


def holder_pid(edge: Edge, bot_id: int) -> int:
    [(holder,)] = edge.query("SELECT holder FROM leases WHERE name = %s", f"send:{bot_id}")
    return int(holder.split(":")[1])


def two_workers_sending(edge: Edge) -> tuple[int, ServiceProcess, ServiceProcess]:
    """The bot with 600 messages to send, two workers, the first sends made: the bot's id,
    the worker that sends for it and the other."""
    bot_id, _, _ = edge.add_bot(BOT)
    queue(edge, bot_id, chats=20, per_chat=30)
    first, second = edge.start_worker(**SLOW), edge.start_worker(**SLOW)
    edge.wait_until(lambda: len(sends(edge)) >= 60, 30, "the first sends")
    pid = holder_pid(edge, bot_id)
    return (bot_id, first, second) if first.proc.pid == pid else (bot_id, second, first)


def test_failover__a_killed_workers_bot_sends_again_within_seconds_and_never_from_two(
    edge: Edge,
) -> None:
    bot_id, killed, other = two_workers_sending(edge)
    pid = killed.proc.pid
    killed.signal(signal.SIGKILL)
    killed_at = time.time()
    edge.wait_until(lambda: bool(by(other.proc.pid, sends(edge))), 30, "the other worker sends")
    took_over = min(c["started"] for c in by(other.proc.pid, sends(edge)))
    # LEASE_SECONDS is 30: before, the bot was silent until it ran out.
    assert took_over - killed_at < 5.0, took_over - killed_at
    wait_all_recorded(edge, bot_id)
    calls = sends(edge)
    assert max(c["at"] for c in by(pid, calls)) < took_over
    # Every message once, in order; one sent twice at most, the documented window (killed
    # after Telegram took it and before its answer was recorded).
    got = texts_by_chat(edge.sim_get("/_sim/sent", bot_id=BOT))
    assert {chat: list(dict.fromkeys(t)) for chat, t in got.items()} == expected(20, 30)
    assert sum(len(t) for t in got.values()) <= 600 + 1


def test_failover__a_stalled_worker_loses_its_bot_and_sends_nothing_for_it_when_it_wakes(
    edge: Edge,
) -> None:
    """SIGSTOP freezes the holder with its connections open, as a network stall or a paused
    host would: its presence runs out, the other worker takes the bot; woken, the stalled one
    finds its leases no longer trusted and sends nothing more for the bot while it is held."""
    bot_id, stalled, other = two_workers_sending(edge)
    pid = stalled.proc.pid
    stalled.signal(signal.SIGSTOP)
    stopped_at = time.time()
    try:
        edge.wait_until(lambda: bool(by(other.proc.pid, sends(edge))), 30, "the other sends")
    finally:
        stalled.signal(signal.SIGCONT)
    took_over = min(c["started"] for c in by(other.proc.pid, sends(edge)))
    assert took_over - stopped_at < 5.0, took_over - stopped_at
    wait_all_recorded(edge, bot_id)
    calls = sends(edge)
    assert holder_pid(edge, bot_id) == other.proc.pid
    # Nothing of the stalled worker's began after the other's first send.
    assert [c for c in by(pid, calls) if c["started"] >= took_over] == []
    got = texts_by_chat(edge.sim_get("/_sim/sent", bot_id=BOT))
    assert {chat: list(dict.fromkeys(t)) for chat, t in got.items()} == expected(20, 30)


def test_failover__updates_in_hand_of_a_killed_worker_are_taken_up_within_seconds(
    edge: Edge,
) -> None:
    """Telegram answers slowly, so a worker holds gated visitors mid-way (asking Telegram
    whether they joined) when it is killed: another takes them up once the killed one's
    presence has run out, not after WORKER_LOCK_SECONDS."""
    gate_setup(edge, BOT)
    first, second = (
        edge.start_worker(WORKER_LOCK_SECONDS="60"),
        edge.start_worker(WORKER_LOCK_SECONDS="60"),
    )
    edge.wait_until(
        lambda: edge.query("SELECT count(*) FROM leases WHERE name LIKE 'poll:%%'") == [(1,)],
        30,
        "the poller",
    )
    edge.sim_post("/_sim/faults", {"delay_ms": 2000})
    people = range(7001, 7011)
    for person in people:
        edge.sim_post("/_sim/messages", {"bot_id": BOT, "user_id": person, "text": "/start promo"})
    in_hand: list[tuple[str]] = []

    def claimed() -> bool:
        in_hand[:] = edge.query("SELECT locked_by FROM inbox WHERE state = 'processing'")
        return bool(in_hand)

    edge.wait_until(claimed, 30, "updates in hand")
    pid = int(in_hand[0][0].split(":")[1])
    killed = first if first.proc.pid == pid else second
    killed.signal(signal.SIGKILL)
    killed_at = time.time()
    edge.sim_post("/_sim/faults", {"delay_ms": 0})
    edge.wait_until(
        lambda: all(edge.sim_get("/_sim/sent", bot_id=BOT, chat_id=p) for p in people),
        45,
        "every person answered",
    )
    # Before, the killed worker's claims held them for WORKER_LOCK_SECONDS (60 s).
    assert time.time() - killed_at < 20
    assert edge.query("SELECT count(*) FROM inbox WHERE state <> 'done'") == [(0,)]
