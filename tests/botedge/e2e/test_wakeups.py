"""LISTEN/NOTIFY and the hand-over: with polling slowed to 10 s, an update is still answered
at once."""

from __future__ import annotations

import json
import re
import time

from botedge.words import FSI, PDI
from tests.botedge.conftest import message, queue_messages
from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP, counted


def test_notify__wakes_the_claim_loop_and_the_sender(edge: Edge) -> None:
    bot_id, _, secret = edge.add_bot(9501)
    api = edge.start_api()
    worker = edge.start_worker(WORKER_POLL_INTERVAL="10")
    edge.wait_for_sender(bot_id)
    # Wake-ups arrive only once its LISTEN connection is up.
    edge.wait_until(
        lambda: "botedge_listening 1.0" in HTTP.get(f"{worker.url}/metrics").text, 10, "LISTEN"
    )
    latencies = []
    for n in range(3):
        started = time.monotonic()
        HTTP.post(
            f"{api.url}/telegram/{bot_id}/webhook",
            content=json.dumps(message(n + 1, 8001, f"n{n}")),
            headers={"X-Telegram-Bot-Api-Secret-Token": secret},
        )
        edge.wait_until(
            lambda n=n: len(edge.sim_get("/_sim/sent", bot_id=9501)) == n + 1, 8, "the reply"
        )
        latencies.append(time.monotonic() - started)
    # Polling alone would take up to 10 s for the claim and as long again for the send.
    assert max(latencies) < 3, latencies
    # The worker's own replies went to its sender directly; what another process queues
    # wakes the sender with a NOTIFY.
    worker_metrics = HTTP.get(f"{worker.url}/metrics").text
    assert 'botedge_replies_queued_total{via="hand-over"} 3.0' in worker_metrics
    queue_messages(edge.database_url, bot_id, [(8002, "from elsewhere")])
    started = time.monotonic()
    edge.query("SELECT pg_notify('outbox', %s)", str(bot_id))
    edge.wait_until(
        lambda: len(edge.sim_get("/_sim/sent", bot_id=9501)) == 4, 8, "the queued message"
    )
    assert time.monotonic() - started < 3


def test_a_reply_behind_an_older_unread_one_of_its_chat__not_handed_over_ahead(
    edge: Edge,
) -> None:
    """Another worker may have queued the person's previous reply, and this sender not read it
    yet: the new reply must not go out first."""
    bot_id, _, secret = edge.add_bot(9503)
    api = edge.start_api()
    worker = edge.start_worker(WORKER_POLL_INTERVAL="10")

    def post(update_id: int, text: str) -> None:
        HTTP.post(
            f"{api.url}/telegram/{bot_id}/webhook",
            content=json.dumps(message(update_id, 8003, text)),
            headers={"X-Telegram-Bot-Api-Secret-Token": secret},
        )

    def texts() -> list[str]:
        return [m["text"] for m in edge.sim_get("/_sim/sent", bot_id=9503)]

    # A first reply shows the sender has read its queue and sends.
    post(1, "first")
    edge.wait_until(lambda: len(texts()) == 1, 15, "the first reply")
    # Queued as another worker would, its NOTIFY not yet sent.
    queue_messages(edge.database_url, bot_id, [(8003, "older, from elsewhere")])
    # The first reply went one way or the other, by whether the sender had started yet.
    before = queued_via(worker.url)
    started = time.monotonic()
    post(2, "second")
    edge.wait_until(lambda: len(texts()) == 3, 15, "both")
    assert texts()[1:] == [
        "older, from elsewhere",
        f'I did not understand "{FSI}second{PDI}". Send /start to begin.',
    ]
    # Not by the 10 s poll: the finish saw the older row and announced its reply instead.
    assert time.monotonic() - started < 3
    after = queued_via(worker.url)
    assert {via: after[via] - before.get(via, 0.0) for via in after} == {
        "notify": 1.0,
        "hand-over": 0.0,
    }


def queued_via(worker: str) -> dict[str, float]:
    """The worker's count of replies queued, by how its sender heard of them."""
    return {"notify": 0.0, "hand-over": 0.0} | counted(
        worker, "botedge_replies_queued_total", "via"
    )


def test_notify__of_another_workers_bot__wakes_this_worker_once_its_affinity_is_over(
    edge: Edge,
) -> None:
    """The claim leaves a fresh update of a bot another worker sends for to that worker for
    WORKER_AFFINITY_SECONDS: a worker woken by each one's NOTIFY would claim and find
    nothing, once an update."""
    bot_id, _, secret = edge.add_bot(9504)
    api = edge.start_api()
    quiet = {"WORKER_POLL_INTERVAL": "10", "WORKER_AFFINITY_SECONDS": "2"}
    edge.start_worker(**quiet)
    holder = edge.wait_for_sender(bot_id)
    other = edge.start_worker(**quiet)
    edge.wait_until(
        lambda: (
            re.search(r"^botedge_listening 1\.0$", HTTP.get(f"{other.url}/metrics").text, re.M)
            is not None
        ),
        15,
        "the second worker listening",
    )
    before = counted(other.url, "botedge_inbox_claims_total", "found")
    started = time.monotonic()
    updates = 10
    for n in range(updates):
        HTTP.post(
            f"{api.url}/telegram/{bot_id}/webhook",
            content=json.dumps(message(n + 1, 8004 + n, "hi")),
            headers={"X-Telegram-Bot-Api-Secret-Token": secret},
        )
        edge.wait_until(
            lambda n=n: len(edge.sim_get("/_sim/sent", bot_id=9504)) == n + 1, 8, "the reply"
        )
    elapsed = time.monotonic() - started
    after = counted(other.url, "botedge_inbox_claims_total", "found")
    claims = sum(after.values()) - sum(before.values())
    # At most one wake-up each affinity period (and one more at either end); one an update
    # before.
    assert claims <= elapsed / 2 + 2 < updates, (claims, elapsed)
    # Every update was the sender's to handle.
    handled = edge.query("SELECT DISTINCT locked_by FROM inbox WHERE bot_id = %s", bot_id)
    assert handled == [(holder,)]
