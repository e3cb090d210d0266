"""Workers as separate processes, each with its own temporary directory, against one database
and one api: the bots' send leases are shared out, every worker claims updates, and each bot's
updates are handled by the worker that sends for it, its replies handed straight to its sender."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.botedge.conftest import message
from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP, counted

WORKER = {"LEASE_SECONDS": "6", "TELEGRAM_POLL_TIMEOUT": "0"}
BOTS = 6
PEOPLE = 10  # per bot, one update each


@pytest.mark.slow(12)
def test_three_workers__share_the_bots_and_each_claims_its_own_bots_updates(
    edge: Edge, tmp_path_factory: pytest.TempPathFactory
) -> None:
    added = [edge.add_bot(9601 + n) for n in range(BOTS)]
    api = edge.start_api()
    workers = [
        edge.start_worker(**WORKER, TMPDIR=str(tmp_path_factory.mktemp(f"worker-{n}")))
        for n in range(3)
    ]
    names = [f"send:{bot}" for bot, _, _ in added]

    def holders() -> dict[int, str]:
        rows = edge.query(
            "SELECT name, holder FROM leases WHERE name = ANY(%s) AND expires_at > now()", names
        )
        return {int(name.split(":")[1]): holder for name, holder in rows}

    edge.wait_until(
        lambda: sorted(Counter(holders().values()).values()) == [2, 2, 2], 30, "two bots each"
    )
    held = holders()
    for n, (bot, _, secret) in enumerate(added):
        for person in range(PEOPLE):
            answer = HTTP.post(
                f"{api.url}/telegram/{bot}/webhook",
                content=json.dumps(message(person + 1, 70_000 + n * 100 + person, "hi")),
                headers={"X-Telegram-Bot-Api-Secret-Token": secret},
            )
            assert answer.status_code == 200
    for n in range(BOTS):
        edge.wait_until(
            lambda n=n: len(edge.sim_get("/_sim/sent", bot_id=9601 + n)) == PEOPLE, 30, "replies"
        )
    # Each worker claimed updates: those of its own two bots.
    handled = edge.query(
        "SELECT bot_id, locked_by, count(*) FROM inbox WHERE state = 'done'"
        " GROUP BY bot_id, locked_by"
    )
    by_holder = Counter({holder: 0 for holder in held.values()})
    by_own = 0
    for bot, holder, count in handled:
        by_holder[holder] += count
        by_own += count if held[bot] == holder else 0
    assert len(by_holder) == 3 and min(by_holder.values()) > 0, by_holder
    # A fresh update of another worker's bot is left to it; one that waited half a second is
    # anyone's (a slow machine may let a few wait that long).
    assert by_own >= 0.8 * BOTS * PEOPLE, (by_own, handled)
    # Each bot's replies went out from the worker holding its lease, most without a NOTIFY.
    for n, (bot, _, _) in enumerate(added):
        agents = {
            c["user_agent"]
            for c in edge.sim_get("/_sim/calls", bot_id=9601 + n, method="sendMessage")
        }
        pid = held[bot].split(":")[1]
        assert agents == {f"gatehouse-botedge/{pid}"}, (bot, agents)
    handed = sum(
        counted(worker.url, "botedge_replies_queued_total", "via").get("hand-over", 0)
        for worker in workers
    )
    assert handed >= 0.8 * BOTS * PEOPLE, handed
