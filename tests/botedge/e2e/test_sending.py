"""Senders against the simulated Telegram: one per bot, in order, within limits and answers."""

from __future__ import annotations

import itertools
import signal
import time
from collections import defaultdict
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from botedge.sender import FULL_READ_EVERY
from shared.testing import Cluster
from tests.botedge.conftest import queue_messages
from tests.botedge.e2e.conftest import Edge


def texts_by_chat(sent: list[dict[str, Any]]) -> dict[int, list[str]]:
    by_chat: dict[int, list[str]] = defaultdict(list)
    for row in sent:
        by_chat[row["chat_id"]].append(row["text"])
    return by_chat


def expected(chats: int, per_chat: int) -> dict[int, list[str]]:
    return {2000 + c: [f"c{c}-{n}" for n in range(per_chat)] for c in range(chats)}


def wait_all_recorded(edge: Edge, bot_id: int) -> None:
    """Until no send of the bot is pending: each was answered and recorded, so whatever
    Telegram will ever have been sent for them it has been sent by now."""
    edge.wait_until(
        lambda: (
            edge.query(
                "SELECT count(*) FROM outbox WHERE bot_id = %s AND state = 'pending'", bot_id
            )
            == [(0,)]
        ),
        30,
        "every send recorded",
    )


def queue(edge: Edge, bot_id: int, chats: int, per_chat: int) -> None:
    queue_messages(
        edge.database_url,
        bot_id,
        [(2000 + c, f"c{c}-{n}") for n in range(per_chat) for c in range(chats)],
    )


@pytest.mark.slow(16)
def test_two_workers__only_the_lease_holder_sends_and_hands_over_on_stop(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(9101)
    queue(edge, bot_id, chats=20, per_chat=15)
    # Slow enough that the holder is still sending when it is stopped.
    first = edge.start_worker(SEND_RATE="40")
    second = edge.start_worker(SEND_RATE="40")
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9101)) >= 100, 30, "sends")
    holder = edge.query("SELECT holder FROM leases WHERE name = %s", f"send:{bot_id}")[0][0]
    stopped, other = (first, second) if f":{first.proc.pid}:" in holder else (second, first)
    stopped.signal(signal.SIGTERM)
    assert stopped.wait(timeout=20) == 0
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9101)) >= 300, 60, "all")
    wait_all_recorded(edge, bot_id)
    sent = edge.sim_get("/_sim/sent", bot_id=9101)
    assert texts_by_chat(sent) == expected(20, 15)
    calls = edge.sim_get("/_sim/calls", bot_id=9101, method="sendMessage")
    agents = [c["user_agent"] for c in calls]
    assert set(agents) == {
        f"gatehouse-botedge/{stopped.proc.pid}",
        f"gatehouse-botedge/{other.proc.pid}",
    }
    # Never both at once: every send of the first holder comes before any of the second.
    last_first = max(c["at"] for c in calls if str(stopped.proc.pid) in c["user_agent"])
    first_second = min(c["at"] for c in calls if str(other.proc.pid) in c["user_agent"])
    assert last_first < first_second


def test_injected_429__nothing_lost_or_doubled_and_retry_after_honoured(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(9102)
    edge.sim_post("/_sim/faults", {"rate_429": 0.25, "retry_after": 1})
    queue(edge, bot_id, chats=10, per_chat=8)
    edge.start_worker()
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9102)) >= 80, 90, "all sent")
    wait_all_recorded(edge, bot_id)
    assert texts_by_chat(edge.sim_get("/_sim/sent", bot_id=9102)) == expected(10, 8)
    calls = sorted(edge.sim_get("/_sim/calls", bot_id=9102), key=lambda c: c["at"])
    refused = [c for c in calls if c["status"] == 429]
    assert len(refused) >= 5
    for limited in refused:
        # No call of that bot may start inside the quiet period it was told about. Calls
        # already on the wire when the 429 was answered cannot be recalled; on a busy 2-core
        # machine the simulator may start them a little late, hence the first 0.25 s.
        quiet_from, quiet_to = limited["at"] + 0.25, limited["at"] + 1.0
        inside = [c for c in calls if quiet_from < c["started"] < quiet_to]
        assert inside == [], (limited, inside[:3])


def test_answers__403_blocks_401_stops_400_fails_not_modified_counts(edge: Edge) -> None:
    bot_id, token, _ = edge.add_bot(9103)
    edge.sim_post("/_sim/faults", {"blocked_users": [3001]})
    with_person = ("INSERT INTO people (telegram_user_id) VALUES (3001) RETURNING id",)
    person = edge.query(with_person[0])[0][0]
    edge.query(
        "INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at)"
        " VALUES (%s, %s, now(), now()) RETURNING bot_id",
        bot_id,
        person,
    )
    queue_messages(edge.database_url, bot_id, [(3001, "to a blocker"), (3002, "fine")])
    edge.query(
        "INSERT INTO outbox (bot_id, chat_id, method, payload, dedupe_key) VALUES"
        " (%s, 3003, 'sendMessage', '{\"chat_id\": 3003, \"text\": \"\"}', 'empty'),"
        " (%s, 3003, 'deleteMessage', '{\"chat_id\": 3003, \"message_id\": 99}', 'gone')"
        " RETURNING id",
        bot_id,
        bot_id,
    )
    edge.start_worker()
    edge.wait_until(
        lambda: edge.query("SELECT count(*) FROM outbox WHERE state = 'pending'") == [(0,)],
        30,
        "every row answered",
    )
    rows = dict(edge.query("SELECT dedupe_key, state || ':' || coalesce(error, '') FROM outbox"))
    assert rows[f"test:{bot_id}:0:to a blocker"] == "failed:Forbidden: bot was blocked by the user"
    assert rows[f"test:{bot_id}:1:fine"] == "sent:"
    assert rows["empty"] == "failed:Bad Request: message text is empty"
    assert rows["gone"] == "failed:Bad Request: message to delete not found"
    assert edge.query("SELECT blocked_at IS NOT NULL FROM bot_people") == [(True,)]
    # A sent message keeps Telegram's message id.
    assert edge.query(
        "SELECT telegram_message_id IS NOT NULL FROM outbox WHERE dedupe_key = %s",
        f"test:{bot_id}:1:fine",
    ) == [(True,)]

    # The token is revoked: the bot is marked and its sender stops.
    edge.sim_post("/_sim/bots/9103/revoke", {})
    queue_messages(edge.database_url, bot_id, [(3002, "after revoke")])
    edge.wait_until(
        lambda: (
            edge.query("SELECT token_invalid_at IS NOT NULL FROM bots WHERE id = %s", bot_id)
            == [(True,)]
        ),
        30,
        "the token marked invalid",
    )
    edge.wait_until(lambda: edge.bots_served(edge.workers[0]) == 0, 20, "the bot dropped")
    calls = edge.sim_get("/_sim/calls", bot_id=9103)
    assert sum(c["status"] == 401 for c in calls) <= 2
    assert edge.query("SELECT state FROM outbox WHERE dedupe_key LIKE '%%after revoke'") == [
        ("pending",)
    ]
    assert token not in edge.workers[0].output()


def test_not_modified_edit__counts_as_sent(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(9104)
    queue_messages(edge.database_url, bot_id, [(4001, "original")])
    edge.start_worker()
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9104)) == 1, 20, "the send")
    edge.query(
        "INSERT INTO outbox (bot_id, chat_id, method, payload, dedupe_key) VALUES"
        ' (%s, 4001, \'editMessageText\', \'{"chat_id": 4001, "message_id": 1,'
        ' "text": "original"}\', \'same-edit\') RETURNING id',
        bot_id,
    )
    edge.wait_until(
        lambda: (
            edge.query("SELECT state FROM outbox WHERE dedupe_key = 'same-edit'") == [("sent",)]
        ),
        20,
        "the edit counted as sent",
    )


def test_replies_before_broadcasts_and_5xx_retried_in_order(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(9105)
    edge.query(
        "INSERT INTO outbox (bot_id, chat_id, method, payload, priority, dedupe_key)"
        " SELECT %s, 4100 + g, 'sendMessage',"
        " json_build_object('chat_id', 4100 + g, 'text', 'broadcast ' || g), 1, 'b' || g"
        " FROM generate_series(1, 5) g RETURNING id",
        bot_id,
    )
    queue_messages(edge.database_url, bot_id, [(4200, "reply")])
    edge.start_worker(SEND_LANES="1")
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9105)) == 6, 20, "all six")
    sent = [r["text"] for r in edge.sim_get("/_sim/sent", bot_id=9105)]
    # The reply was queued last but goes first.
    assert sent[0] == "reply"

    edge.sim_post("/_sim/faults", {"rate_5xx": 0.3})
    queue(edge, bot_id, chats=5, per_chat=6)
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9105)) >= 36, 60, "the rest")
    wait_all_recorded(edge, bot_id)
    by_chat = texts_by_chat(edge.sim_get("/_sim/sent", bot_id=9105))
    for chat, texts in expected(5, 6).items():
        assert by_chat[chat] == texts
    failures = [c for c in edge.sim_get("/_sim/calls", bot_id=9105) if c["status"] == 502]
    assert failures, "the fault was injected"


@pytest.mark.slow(11)
def test_429_pause__outlives_a_killed_worker(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(9110)
    queue(edge, bot_id, chats=1, per_chat=1)
    retry_after = 10
    edge.sim_post("/_sim/faults", {"rate_429": 1.0, "retry_after": retry_after})
    quick = {"LEASE_SECONDS": "6", "TELEGRAM_POLL_TIMEOUT": "0"}
    first = edge.start_worker(**quick)
    edge.wait_until(
        lambda: any(c["status"] == 429 for c in edge.sim_get("/_sim/calls", bot_id=9110)),
        20,
        "a 429",
    )
    # Killed once the pause is on the bot's row: what outlives the worker is what it recorded
    # (a kill between Telegram's answer and that write loses it, as any crash would).
    edge.wait_until(
        lambda: (
            edge.query("SELECT paused_until > now() FROM bots WHERE id = %s", bot_id) == [(True,)]
        ),
        20,
        "the pause recorded on the bot's row",
    )
    first.proc.kill()
    first.proc.wait()
    edge.sim_post("/_sim/faults", {"rate_429": 0.0})
    edge.start_worker(**quick)
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9110)) == 1, 40, "the send")
    calls = edge.sim_get("/_sim/calls", bot_id=9110)
    told = max(c["at"] for c in calls if c["status"] == 429)
    after = [c for c in calls if c["started"] > told]
    # The second worker took the lease within seconds, yet called nothing before the pause
    # it found on the bot's row was over (0.3 s for the two clocks' reading).
    assert after, calls
    assert min(c["started"] for c in after) >= told + retry_after - 0.3, after


@pytest.mark.slow(19)
def test_token_check_at_start__backs_off_on_5xx_and_honours_429(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(9111)
    queue(edge, bot_id, chats=1, per_chat=1)
    edge.sim_post("/_sim/faults", {"rate_5xx": 1.0})
    worker = edge.start_worker()

    def get_mes() -> list[dict[str, Any]]:
        return sorted(
            edge.sim_get("/_sim/calls", bot_id=9111, method="getMe"), key=lambda c: c["started"]
        )

    edge.wait_until(lambda: len(get_mes()) >= 4, 30, "four getMe calls")
    starts = [c["started"] for c in get_mes()[:4]]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    # 1, 2 and 4 seconds: doubling, not a fixed interval.
    assert gaps[0] >= 0.9 and gaps[1] >= 1.8 and gaps[2] >= 3.6, gaps
    edge.sim_post("/_sim/faults", {"rate_5xx": 0.0, "rate_429": 1.0, "retry_after": 3})
    edge.wait_until(lambda: any(c["status"] == 429 for c in get_mes()), 30, "a 429 on getMe")
    edge.sim_post("/_sim/faults", {"rate_429": 0.0})
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9111)) == 1, 30, "the send")
    told = max(c["at"] for c in get_mes() if c["status"] == 429)
    later = [c["started"] for c in edge.sim_get("/_sim/calls", bot_id=9111) if c["started"] > told]
    assert min(later) >= told + 3 - 0.3
    output = worker.output()
    assert '"level": "ERROR"' not in output
    assert "Traceback" not in output


def test_short_lease__still_sends(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(9112)
    queue(edge, bot_id, chats=3, per_chat=2)
    edge.start_worker(LEASE_SECONDS="6", TELEGRAM_POLL_TIMEOUT="0")
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9112)) == 6, 30, "all sent")
    assert texts_by_chat(edge.sim_get("/_sim/sent", bot_id=9112)) == expected(3, 2)


@pytest.mark.slow(13)
def test_database_blip_after_telegram_accepted__each_message_sent_once(
    edge: Edge, pg_cluster: Cluster
) -> None:
    bot_id, _, _ = edge.add_bot(9113)
    queue(edge, bot_id, chats=1, per_chat=3)
    edge.sim_post("/_sim/faults", {"delay_ms": 1500})
    worker = edge.start_worker()
    edge.wait_until(
        lambda: edge.sim_get("/_sim/inflight").get("sendmessage", 0) >= 1, 30, "a send on the wire"
    )
    name = urlsplit(edge.database_url).path.lstrip("/")
    with psycopg.connect(pg_cluster.admin_url, autocommit=True) as admin:
        # While Telegram holds the call: no connection to the database, old or new.
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
        )
        try:
            edge.wait_until(
                lambda: "could not record send" in worker.output(), 30, "a failed record"
            )
        finally:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    edge.wait_until(
        lambda: edge.query("SELECT count(*) FROM outbox WHERE state = 'sent'") == [(3,)],
        60,
        "all three recorded as sent",
    )
    assert texts_by_chat(edge.sim_get("/_sim/sent", bot_id=9113)) == expected(1, 3)


def test_a_send_committed_after_a_later_one__still_sent_without_a_full_read(edge: Edge) -> None:
    """A sender reads only what committed since its last read. Ids cannot tell that: the
    transaction holding the lower id commits last here, after the sender has read past it."""
    bot_id, _, _ = edge.add_bot(9108)
    edge.start_worker(WORKER_POLL_INTERVAL="0.2")
    with psycopg.connect(edge.database_url) as late:
        early_id = late.execute(
            "INSERT INTO outbox (bot_id, chat_id, method, payload, dedupe_key)"
            " VALUES (%s, 5001, 'sendMessage', '{\"chat_id\": 5001, \"text\": \"late\"}', 'late')"
            " RETURNING id",
            (bot_id,),
        ).fetchone()
        queue_messages(edge.database_url, bot_id, [(5002, "early")])
        edge.wait_until(
            lambda: [r["text"] for r in edge.sim_get("/_sim/sent", bot_id=9108)] == ["early"],
            20,
            "the later row sent while the earlier one is uncommitted",
        )
        later_id = edge.query("SELECT id FROM outbox WHERE dedupe_key LIKE 'test:%%'")[0][0]
        assert early_id is not None and early_id[0] < later_id
        late.commit()
        committed = time.monotonic()
    edge.wait_until(
        lambda: len(edge.sim_get("/_sim/sent", bot_id=9108)) == 2, 20, "the late row sent"
    )
    # Well before the periodic full read would have found it.
    assert time.monotonic() - committed < FULL_READ_EVERY / 3
    wait_all_recorded(edge, bot_id)


# A short lease, so a share settles in seconds; every bot's sends spread over most of the run.
SHARED_OUT = {
    "LEASE_SECONDS": "6",
    "TELEGRAM_POLL_TIMEOUT": "0",
    "SEND_RATE": "6",
    "LOG_LEVEL": "INFO",
}
LEASE = 6.0


def shares(edge: Edge, bots: list[int]) -> list[int]:
    """How many of the bots' send leases each holder has, largest first."""
    rows = edge.query(
        "SELECT count(*) FROM leases WHERE name = ANY(%s) AND expires_at > now()"
        " GROUP BY holder ORDER BY count(*) DESC",
        [f"send:{bot}" for bot in bots],
    )
    return [n for (n,) in rows]


def settle(edge: Edge, bots: list[int], expected: list[int], what: str) -> float:
    """Seconds until the leases are held `expected` ways."""
    began = time.monotonic()
    edge.wait_until(lambda: shares(edge, bots) == expected, 4 * LEASE, what)
    return time.monotonic() - began


@pytest.mark.slow(18)
def test_send_leases__shared_out_as_workers_join_and_leave_none_sent_twice_or_out_of_order(
    edge: Edge,
) -> None:
    telegram_ids = [9201 + n for n in range(6)]
    bots = [edge.add_bot(telegram_id)[0] for telegram_id in telegram_ids]
    for bot in bots:
        queue(edge, bot, chats=20, per_chat=5)
    first = edge.start_worker(**SHARED_OUT)
    settle(edge, bots, [6], "the first worker holds every bot")
    second = edge.start_worker(**SHARED_OUT)
    joined = settle(edge, bots, [3, 3], "three bots each")
    third = edge.start_worker(**SHARED_OUT)
    joined_again = settle(edge, bots, [2, 2, 2], "two bots each")
    first.signal(signal.SIGTERM)
    assert first.wait(timeout=20) == 0
    left = settle(edge, bots, [3, 3], "three bots each again")
    # Each share settled within a lease period of the worker starting or stopping (measured
    # from its start or its exit, so the process's own start-up counts against it).
    assert max(joined, joined_again, left) < LEASE, (joined, joined_again, left)
    for bot, telegram_id in zip(bots, telegram_ids, strict=True):
        edge.wait_until(
            lambda t=telegram_id: len(edge.sim_get("/_sim/sent", bot_id=t)) >= 100, 60, "all"
        )
        wait_all_recorded(edge, bot)
    moved = 0
    for telegram_id in telegram_ids:
        # Every chat's messages once each, in order, whoever sent them.
        assert texts_by_chat(edge.sim_get("/_sim/sent", bot_id=telegram_id)) == expected(20, 5)
        calls = edge.sim_get("/_sim/calls", bot_id=telegram_id, method="sendMessage")
        # The sends in time order, as runs of one sender: a hand-over starts a new run; two
        # senders at once would interleave into many.
        agents = [c["user_agent"] for c in sorted(calls, key=lambda c: c["at"])]
        runs = [agent for agent, _ in itertools.groupby(agents)]
        assert len(runs) <= 5, runs
        moved += len(runs) > 1
    # Bots did change hands mid-send (the case under test), and the stopped worker sent too.
    assert moved >= 3, moved
    agents = {
        c["user_agent"]
        for t in telegram_ids
        for c in edge.sim_get("/_sim/calls", bot_id=t, method="sendMessage")
    }
    assert agents == {f"gatehouse-botedge/{w.proc.pid}" for w in (first, second, third)}
