"""Many people, many updates, several worker processes: each update once, each chat in order."""

from __future__ import annotations

import asyncio
import json
import signal
from collections import defaultdict

import aiohttp
import pytest

from botedge.words import FSI, PDI
from tests.botedge.conftest import message
from tests.botedge.e2e.conftest import Edge
from tests.scale import sized

# 2,000 updates at full size.
PEOPLE = sized(80, 200)
PER_PERSON = 10


async def telegram_delivers(edge: Edge, bot_id: int, secret: str) -> None:
    """As Telegram does: each chat's updates one after another, chats in parallel."""
    assert edge.api is not None
    url = f"{edge.api.url}/telegram/{bot_id}/webhook"
    headers = {"X-Telegram-Bot-Api-Secret-Token": secret, "content-type": "application/json"}
    gate = asyncio.Semaphore(48)
    # aiohttp: a tenth of httpx's client CPU per request, and this process also serves the
    # simulated Telegram the workers send to.
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=48), timeout=aiohttp.ClientTimeout(total=30)
    ) as client:

        async def chat(person: int) -> None:
            for n in range(PER_PERSON):
                update_id = person * 100 + n + 1
                body = json.dumps(message(update_id, 10_000 + person, f"p{person}-m{n}"))
                async with gate, client.post(url, data=body, headers=headers) as response:
                    assert response.status == 200

        await asyncio.gather(*(chat(p) for p in range(PEOPLE)))


def assert_each_answered_once_in_order(edge: Edge, bot_telegram_id: int) -> None:
    sent = edge.sim_get("/_sim/sent", bot_id=bot_telegram_id)
    by_chat: dict[int, list[str]] = defaultdict(list)
    for row in sent:
        by_chat[row["chat_id"]].append(row["text"])
    assert len(by_chat) == PEOPLE
    for person in range(PEOPLE):
        texts = by_chat[10_000 + person]
        expected = [
            f'I did not understand "{FSI}p{person}-m{n}{PDI}". Send /start to begin.'
            for n in range(PER_PERSON)
        ]
        assert texts == expected, f"person {person}: {texts}"
    assert edge.query("SELECT state, count(*) FROM inbox GROUP BY 1") == [
        ("done", PEOPLE * PER_PERSON)
    ]
    assert edge.query("SELECT state, count(*) FROM outbox GROUP BY 1") == [
        ("sent", PEOPLE * PER_PERSON)
    ]


def settled(edge: Edge) -> bool:
    waiting = edge.query(
        "SELECT (SELECT count(*) FROM inbox WHERE state <> 'done')"
        " + (SELECT count(*) FROM outbox WHERE state <> 'sent')"
    )
    return bool(waiting[0][0] == 0)


def all_sent(edge: Edge, bot_telegram_id: int) -> bool:
    return len(edge.sim_get("/_sim/sent", bot_id=bot_telegram_id)) >= PEOPLE * PER_PERSON


@pytest.mark.slow(8)
@pytest.mark.scaled
def test_many_people_ten_updates_each_two_workers(edge: Edge) -> None:
    bot_id, _, secret = edge.add_bot(8101)
    edge.start_api()
    # The send lease staying with one worker is the point here. With the default 1.5 s
    # presence, a worker starved of CPU on a loaded machine is judged gone and hands its bot
    # over, as it should (tests/botedge/e2e/test_failover.py).
    edge.start_worker(PRESENCE_SECONDS="10")
    edge.start_worker(PRESENCE_SECONDS="10")
    asyncio.run(telegram_delivers(edge, bot_id, secret))
    edge.wait_until(lambda: all_sent(edge, 8101), 120, "every reply")
    # Nothing left that could still be sent: a second send would already be in the log.
    edge.wait_until(lambda: settled(edge), 30, "every update done and every reply sent")
    assert_each_answered_once_in_order(edge, 8101)
    # Both workers handled updates; one sender (one process) sent everything.
    agents = {
        c["user_agent"] for c in edge.sim_get("/_sim/calls", bot_id=8101, method="sendMessage")
    }
    assert len(agents) == 1
    assert all("Traceback" not in w.output() for w in edge.workers)


@pytest.mark.slow(14)
@pytest.mark.scaled
def test_worker_killed_mid_run__every_update_still_answered_once(edge: Edge) -> None:
    bot_id, _, secret = edge.add_bot(8102)
    edge.start_api()
    first = edge.start_worker(WORKER_LOCK_SECONDS="2", WORKER_SLOTS="8")
    second = edge.start_worker(WORKER_LOCK_SECONDS="2", WORKER_SLOTS="8")
    holder = edge.wait_for_sender(bot_id)
    # Kill the worker that is not sending: what is measured is update handling.
    victim = second if f":{first.proc.pid}:" in holder else first

    held_at_kill: list[int] = []

    async def deliver_and_kill() -> None:
        delivery = asyncio.create_task(telegram_delivers(edge, bot_id, secret))
        while not edge.query("SELECT 1 FROM inbox WHERE state = 'done' OFFSET 300 LIMIT 1"):
            await asyncio.sleep(0.05)
        # Freeze the victim, and kill it only while it has updates in hand.
        while not held_at_kill:
            victim.signal(signal.SIGSTOP)
            held_at_kill.extend(
                row[0]
                for row in edge.query(
                    "SELECT id FROM inbox WHERE state = 'processing' AND locked_by LIKE %s",
                    f"%:{victim.proc.pid}:%",
                )
            )
            if held_at_kill:
                victim.signal(signal.SIGKILL)
            else:
                victim.signal(signal.SIGCONT)
                await asyncio.sleep(0.01)
        await delivery

    asyncio.run(deliver_and_kill())
    victim.wait(timeout=10)
    edge.wait_until(lambda: all_sent(edge, 8102), 120, "every reply after the kill")
    edge.wait_until(lambda: settled(edge), 30, "every update done and every reply sent")
    assert_each_answered_once_in_order(edge, 8102)
    # What the dead worker held came back once its claims ran out, and was handled once. A
    # commit already on its way to PostgreSQL when the worker was frozen still lands: that row
    # was finished by the victim itself (its first attempt), not lost and not handled twice.
    rows = edge.query("SELECT attempt, locked_by FROM inbox WHERE id = ANY(%s)", held_at_kill)
    reclaimed = [attempt for attempt, _ in rows if attempt > 1]
    its_own = [by for attempt, by in rows if attempt == 1 and f":{victim.proc.pid}:" in by]
    assert reclaimed
    assert len(reclaimed) + len(its_own) == len(held_at_kill)
