"""Broadcasts end to end: real worker processes fan a broadcast out to 2,000 people of a bot
through the outbox to the simulated Telegram, through a SIGKILL of the worker fanning out, with
people who blocked the bot or whom Telegram cannot find, while a visitor's reply still goes
first; cancel; the test message."""

from __future__ import annotations

import signal
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP, SECRETS

BOT = 5550801
PEOPLE = range(9_000_001, 9_002_001)
BLOCKED = list(PEOPLE[:100])
NOT_FOUND = list(PEOPLE[1000:1020])
VISITOR = 9_100_001
AUTH = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
# Slow enough that the fan-out and the sending overlap for seconds: 2,000 sends at 400/s, 100
# people a batch, at most 300 waiting; claims that run out in 2 s after a kill.
SLOW = {
    "SEND_RATE": "400",
    "BROADCAST_BATCH": "100",
    "BROADCAST_WINDOW": "300",
    "WORKER_LOCK_SECONDS": "2",
    "LEASE_SECONDS": "9",
}


def people(edge: Edge, bot_id: int, first: int = PEOPLE[0], last: int = PEOPLE[-1]) -> None:
    """The bot's people, as if each had started it: 2,000 unless told."""
    edge.query(
        "WITH p AS (INSERT INTO people (telegram_user_id, first_name)"
        " SELECT u, 'P' || u FROM generate_series(%s::bigint, %s::bigint) u RETURNING id)"
        " INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at, started_at)"
        " SELECT %s, id, now(), now(), now() FROM p RETURNING 1",
        first,
        last,
        bot_id,
    )


def broadcast(edge: Edge, bot_id: int, text: str) -> int:
    [(broadcast_id,)] = edge.query(
        "INSERT INTO broadcasts (bot_id, text) VALUES (%s, %s) RETURNING id", bot_id, text
    )
    edge.query("SELECT pg_notify('broadcasts', '')")
    return int(broadcast_id)


def progress(edge: Edge, broadcast_id: int) -> dict[str, Any]:
    [row] = edge.query(
        "SELECT state, recipients, skipped, sent, failed, unsent, fanned_to, locked_by"
        " FROM broadcasts WHERE id = %s",
        broadcast_id,
    )
    keys = ("state", "recipients", "skipped", "sent", "failed", "unsent", "fanned_to", "by")
    return dict(zip(keys, row, strict=True))


def received(edge: Edge, text: str) -> Counter[int]:
    return Counter(m["chat_id"] for m in edge.sim_get("/_sim/sent") if m["text"] == text)


@pytest.mark.slow(17)
def test_broadcast_to_2000__killed_mid_fan_out__each_once_marks_and_replies_first(
    edge: Edge,
) -> None:
    bot_id, _, _ = edge.add_bot(BOT, mode="polling")
    people(edge, bot_id)
    # And a visitor who started the bot earlier: one more recipient, 2,001.
    people(edge, bot_id, VISITOR, VISITOR)
    edge.sim_post("/_sim/faults", {"blocked_users": BLOCKED, "unknown_users": NOT_FOUND})
    first = edge.start_worker(**SLOW)
    second = edge.start_worker(**SLOW)
    sender = edge.wait_for_sender(bot_id)
    text = "Spring sale: <b>half price</b> &amp; more"
    broadcast_id = broadcast(edge, bot_id, text)

    # Freeze the worker fanning out once it has queued some and not all, then kill it.
    edge.wait_until(
        lambda: (progress(edge, broadcast_id)["fanned_to"] or 0) > 0, 30, "the first batch"
    )
    victim = None
    while victim is None:
        now = progress(edge, broadcast_id)
        assert now["state"] == "fanning_out", "the fan-out ended before it could be cut"
        for worker in (first, second):
            if f":{worker.proc.pid}:" in (now["by"] or ""):
                worker.signal(signal.SIGSTOP)
                if progress(edge, broadcast_id)["state"] == "fanning_out":
                    victim = worker
                    worker.signal(signal.SIGKILL)
                else:
                    worker.signal(signal.SIGCONT)
    victim.wait(timeout=10)
    at_kill = progress(edge, broadcast_id)
    assert 0 < at_kill["recipients"] < len(PEOPLE) - len(BLOCKED)

    # A visitor writes while it is being sent: the answer goes before the broadcast's rest.
    edge.sim_post("/_sim/messages", {"bot_id": BOT, "user_id": VISITOR, "text": "hello"})

    edge.wait_until(
        lambda: progress(edge, broadcast_id)["state"] == "done", 90, "the broadcast done"
    )
    done = progress(edge, broadcast_id)
    # Resumed by the other worker after the last committed batch: every person queued once.
    assert (done["recipients"], done["skipped"]) == (2001, 0)
    assert (done["sent"], done["failed"], done["unsent"]) == (1881, 120, 0)
    got = received(edge, "Spring sale: <b>half price</b> &amp; more")
    refused = set(BLOCKED) | set(NOT_FOUND)
    assert set(got) == (set(PEOPLE) | {VISITOR}) - refused, "somebody missed"
    twice = {chat: n for chat, n in got.items() if n > 1}
    # Twice only for a send in flight when the sender itself died (its record never written).
    if f":{victim.proc.pid}:" in sender:
        assert len(twice) <= 16
    else:
        assert twice == {}
    [(keys, distinct)] = edge.query(
        "SELECT count(*), count(DISTINCT chat_id) FROM outbox WHERE broadcast_id = %s",
        broadcast_id,
    )
    assert keys == distinct == 2001

    # The visitor's answer was sent while broadcast rows were still waiting.
    [(reply_sent_at,)] = edge.query(
        "SELECT sent_at FROM outbox WHERE chat_id = %s AND priority = 0", VISITOR
    )
    [(later,)] = edge.query(
        "SELECT count(*) FROM outbox WHERE broadcast_id = %s AND sent_at > %s",
        broadcast_id,
        reply_sent_at,
    )
    assert later > 100

    # The refusals marked the people: blocked, or unreachable ("chat not found").
    marks = dict(
        edge.query(
            "SELECT CASE WHEN bp.blocked_at IS NOT NULL THEN 'blocked'"
            " WHEN bp.unreachable_at IS NOT NULL THEN 'unreachable' ELSE 'fine' END, count(*)"
            " FROM bot_people bp JOIN people p ON p.id = bp.person_id"
            " WHERE bp.bot_id = %s AND p.telegram_user_id <> %s GROUP BY 1",
            bot_id,
            VISITOR,
        )
    )
    assert marks == {"blocked": 100, "unreachable": 20, "fine": 1880}

    # The next broadcast passes them over.
    again = broadcast(edge, bot_id, "Second")
    edge.wait_until(lambda: progress(edge, again)["state"] == "done", 60, "the second broadcast")
    second_done = progress(edge, again)
    assert (second_done["recipients"], second_done["skipped"]) == (1881, 120)
    assert (second_done["sent"], second_done["failed"]) == (1881, 0)


def ask(edge: Edge, path: str, body: Any = None) -> httpx.Response:
    assert edge.api is not None
    return HTTP.post(f"{edge.api.url}{path}", json=body, headers=AUTH, timeout=30)


def test_cancel__pending_sends_dropped_and_the_fan_out_stops(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(BOT, mode="polling")
    people(edge, bot_id)
    edge.start_api()
    edge.start_worker(SEND_RATE="50", BROADCAST_BATCH="100", BROADCAST_WINDOW="200")
    edge.wait_for_sender(bot_id)
    broadcast_id = broadcast(edge, bot_id, "Going out slowly")
    edge.wait_until(lambda: len(received(edge, "Going out slowly")) >= 20, 30, "the first sends")
    stopped = ask(edge, f"/internal/broadcasts/{broadcast_id}/cancel")
    assert stopped.status_code == 200, stopped.text
    counts = stopped.json()
    assert counts["state"] == "cancelled"
    assert counts["unsent"] > 0
    assert counts["sent"] + counts["failed"] + counts["unsent"] == counts["recipients"] < 2000
    # The sender dropped what it held: at most the sends in flight at the cancel still went.
    edge.wait_until(
        lambda: (
            not edge.query(
                "SELECT 1 FROM outbox WHERE broadcast_id = %s AND state = 'pending'", broadcast_id
            )
        ),
        10,
        "nothing pending",
    )
    before = len(received(edge, "Going out slowly"))
    # The sender goes by (priority, id): rows it still held of the cancelled broadcast would all
    # go before any of a later one. Only sends already in flight at the cancel may follow.
    broadcast(edge, bot_id, "After")
    edge.wait_until(lambda: bool(received(edge, "After")), 30, "the later broadcast")
    assert len(received(edge, "Going out slowly")) <= before + 16
    assert progress(edge, broadcast_id)["recipients"] == counts["recipients"]
    again = ask(edge, f"/internal/broadcasts/{broadcast_id}/cancel")
    assert again.status_code == 409
    assert ask(edge, "/internal/broadcasts/999999/cancel").status_code == 404


def test_test_message__to_one_person_now_and_refusals_at_the_field(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(BOT, mode="polling")
    edge.start_api()
    edge.sim_post("/_sim/faults", {"blocked_users": [9_000_002], "unknown_users": [9_000_003]})
    body = {
        "bot_id": bot_id,
        "chat_id": 9_000_001,
        "text": "Tonight: <i>live</i>",
        "button_text": "Watch",
        "button_url": "https://example.com/live",
    }
    sent = ask(edge, "/internal/broadcasts/test", body)
    assert sent.status_code == 200, sent.text
    [message] = edge.sim_get("/_sim/sent", chat_id=9_000_001)
    assert message["text"] == "Tonight: <i>live</i>"
    for chat in (9_000_002, 9_000_003):
        refused = ask(edge, "/internal/broadcasts/test", {**body, "chat_id": chat})
        assert refused.status_code == 422
        assert refused.json()["errors"] == [{"field": "to", "code": "unreachable"}]
    bad = ask(edge, "/internal/broadcasts/test", {**body, "text": "a < b"})
    assert bad.status_code == 422
    assert bad.json()["errors"] == [{"field": "text", "code": "invalid"}]
    assert "can't parse entities" in bad.json()["detail"]
    no_content = ask(
        edge, "/internal/broadcasts/test", {"bot_id": bot_id, "chat_id": 1, "content_id": 77}
    )
    assert no_content.json()["errors"] == [{"field": "content_id", "code": "not-found"}]


CHANNEL = -1001000000990
STARTER, JOINER = 9_100_101, 9_100_102


def test_broadcast__goes_only_to_people_who_started_the_bot_and_counts_joiners_unreachable(
    edge: Edge,
) -> None:
    """One person starts the bot, another only joins a channel it runs (Telegram refuses a
    message to someone who never started the bot): the broadcast goes to the first, and the
    second is counted as passed over without a call to Telegram."""
    bot_id, _, _ = edge.add_bot(BOT, mode="polling")
    edge.sim_post(
        "/_sim/chats",
        {"id": CHANNEL, "type": "channel", "title": "Club", "admin_bots": [BOT], "members": {}},
    )
    edge.query(
        "INSERT INTO channels (telegram_chat_id, title) VALUES (%s, 'Club') RETURNING id", CHANNEL
    )
    edge.start_worker()
    edge.sim_post("/_sim/messages", {"bot_id": BOT, "user_id": STARTER, "text": "/start"})
    # Answered: the bot has polled since, asking for joins too.
    edge.wait_until(lambda: bool(edge.sim_get("/_sim/sent", chat_id=STARTER)), 30, "the welcome")
    edge.sim_post("/_sim/join", {"chat_id": CHANNEL, "user_id": JOINER})
    edge.wait_until(
        lambda: (
            len(
                edge.query(
                    "SELECT 1 FROM people WHERE telegram_user_id IN (%s, %s)", STARTER, JOINER
                )
            )
            == 2
            and not edge.query("SELECT 1 FROM inbox WHERE state <> 'done'")
        ),
        30,
        "both people recorded",
    )
    broadcast_id = broadcast(edge, bot_id, "News for starters")
    edge.wait_until(
        lambda: progress(edge, broadcast_id)["state"] == "done", 30, "the broadcast done"
    )
    assert received(edge, "News for starters") == Counter({STARTER: 1})
    done = progress(edge, broadcast_id)
    assert (done["recipients"], done["sent"], done["skipped"]) == (1, 1, 1)
    calls = edge.sim_get("/_sim/calls", method="sendMessage")
    assert [c["chat_id"] for c in calls] == [STARTER, STARTER]  # the welcome, the broadcast
