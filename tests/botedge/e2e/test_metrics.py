"""The worker's /metrics: queue depth and the oldest update's age, sends, handling."""

from __future__ import annotations

import re

from tests.botedge.conftest import enqueue
from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP


def gauge(text: str, name: str, bot_id: int) -> float:
    match = re.search(rf'^{name}{{bot_id="{bot_id}"}} ([0-9.e+]+)$', text, re.MULTILINE)
    assert match, f"{name} for bot {bot_id} missing"
    return float(match.group(1))


def test_wedged_update__oldest_age_grows_while_depth_stays_flat(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(9401)
    enqueue(edge.database_url, bot_id, [(1, 7001, "a"), (2, 7001, "b"), (3, 7001, "c")])
    # What a wedged worker leaves behind: the person's first update in hand, for a long time.
    edge.query(
        "UPDATE inbox SET state = 'processing', lock_token = gen_random_uuid(),"
        " locked_until = now() + interval '1 hour', locked_by = 'wedged'"
        " WHERE update_id = 1 RETURNING id"
    )
    worker = edge.start_worker(GAUGES_INTERVAL="0.3")

    def read() -> str | None:
        text = HTTP.get(f"{worker.url}/metrics").text
        return text if f'botedge_inbox_depth{{bot_id="{bot_id}"}}' in text else None

    edge.wait_until(lambda: read() is not None, 15, "the first gauges")
    first = read()
    assert first is not None
    first_age = gauge(first, "botedge_inbox_oldest_age_seconds", bot_id)
    # Later readings, taken by the worker itself, until the age has grown by 1.5 s.
    edge.wait_until(
        lambda: (
            gauge(read() or first, "botedge_inbox_oldest_age_seconds", bot_id) >= first_age + 1.5
        ),
        15,
        "the oldest age to grow",
    )
    second = read()
    assert second is not None
    assert gauge(first, "botedge_inbox_depth", bot_id) == 3
    assert gauge(second, "botedge_inbox_depth", bot_id) == 3
    # The person behind the wedge waits; nothing of theirs was handled out of order.
    assert edge.query("SELECT count(*) FROM inbox WHERE state = 'done'") == [(0,)]


def test_metrics__handled_and_sent_counters(edge: Edge) -> None:
    bot_id, _, _ = edge.add_bot(9402)
    enqueue(edge.database_url, bot_id, [(1, 7101, "x"), (2, 7102, "y")])
    worker = edge.start_worker()
    edge.wait_until(lambda: len(edge.sim_get("/_sim/sent", bot_id=9402)) == 2, 20, "replies")
    # The counter moves when the send is recorded, just after Telegram saw it.
    edge.wait_until(
        lambda: 'botedge_sends_total{outcome="sent"} 2.0' in HTTP.get(f"{worker.url}/metrics").text,
        10,
        "both sends counted",
    )
    text = HTTP.get(f"{worker.url}/metrics").text
    assert 'botedge_updates_handled_total{outcome="done"} 2.0' in text
    assert 'botedge_sends_total{outcome="sent"} 2.0' in text
    assert "botedge_update_handling_seconds_count 2.0" in text
    assert 'botedge_lease_changes_total{change="taken",kind="send"} 1.0' in text
