"""A worker that dies or stalls hands its bots over in seconds, not when its leases run out,
and two workers never send for one bot at once, across kills, stalls and a PostgreSQL restart:
the holder stops trusting its leases before the database lets another take them, and records
what Telegram took before another may judge it gone."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from shared import migrate
from shared.testing import start_embedded
from tests.botedge.e2e.conftest import Edge
from tests.botedge.e2e.test_gate import gate_setup
from tests.botedge.e2e.test_sending import expected, queue, texts_by_chat, wait_all_recorded
from tests.conftest import HTTP, Serve, ServiceProcess, serve_simtelegram

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


def overlapping(calls: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Pairs of sends by two workers whose times overlap: one began before the other's was
    answered."""
    found = []
    last: dict[str, dict[str, Any]] = {}
    for call in sorted(calls, key=lambda c: c["started"]):
        for agent, other in last.items():
            if agent != call["user_agent"] and other["at"] > call["started"]:
                found.append((other, call))
        latest = last.get(call["user_agent"])
        if latest is None or call["at"] > latest["at"]:
            last[call["user_agent"]] = call
    return found


def test_failover__overlap_is_found_between_two_workers_sends() -> None:
    a = {"user_agent": "gatehouse-botedge/1", "started": 1.0, "at": 1.5}
    b = {"user_agent": "gatehouse-botedge/2", "started": 1.4, "at": 1.6}
    c = {"user_agent": "gatehouse-botedge/2", "started": 1.7, "at": 1.8}
    assert overlapping([a, b, c]) == [(a, b)]
    assert overlapping([a, c]) == []


@pytest.mark.slow(24)
def test_failover__two_workers_never_send_for_one_bot_at_once_across_a_postgresql_restart(
    start_service: Callable[..., ServiceProcess], serve: Serve
) -> None:
    """PostgreSQL stopped while a worker sends for the bot and started again: both workers
    lose and regain the database, the leases' clock is the database's, and no send of one
    worker overlaps one of the other's; every message is sent once, in order."""
    pg, admin_url = start_embedded()
    edge: Edge | None = None
    try:
        port = int(admin_url.rsplit(":", 1)[1].split("/")[0])
        url = pg.ensure_database(port, "gatehouse")
        migrate.apply(url)
        edge = Edge(url, start_service, serve_simtelegram(serve, SIM_ENFORCE_LIMITS="false"), {})
        bot_id, holder, other = two_workers_sending(edge)
        workers = (holder, other)
        pg.stop()
        stopped_at = time.time()
        # Both have noticed: neither is ready without its database.
        edge.wait_until(
            lambda: all(HTTP.get(f"{w.url}/readyz", timeout=5).status_code == 503 for w in workers),
            30,
            "both workers to lose the database",
        )
        pg.start()
        wait_all_recorded(edge, bot_id)
        calls = sends(edge)
        assert [c for c in calls if c["started"] > stopped_at], "nothing sent after the restart"
        after = {c["user_agent"] for c in calls if c["started"] > stopped_at}
        print(f"sending before: gatehouse-botedge/{holder.proc.pid}; after: {sorted(after)}")
        assert overlapping(calls) == []
        got = texts_by_chat(edge.sim_get("/_sim/sent", bot_id=BOT))
        twice = sorted(t for texts in got.values() for t in set(texts) if texts.count(t) > 1)
        assert twice == [], f"sent twice across the restart: {twice}"
        assert got == expected(20, 30)
    finally:
        if edge is not None:
            edge.close()
        pg.destroy()
