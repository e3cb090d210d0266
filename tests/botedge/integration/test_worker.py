"""The claim loop in-process on a real PostgreSQL, with handlers that fail on purpose."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from botedge.app import create_api_app
from botedge.consumer import ConsumerConfig, InboxConsumer
from botedge.handlers import BotLogic
from botedge.outbox_store import Reply
from botedge.settings import load
from botedge.updates import InboxRow
from shared.db import Connection, create_pool
from shared.listen import Notifier
from shared.settings import CommonSettings, Reader
from shared.testing import serve_in_thread
from tests.botedge.conftest import enqueue, insert_bot
from tests.conftest import HTTP, ROOT, SECRETS, service_env


class FailingFor(BotLogic):
    """Fails every update of the given people; records what it saw."""

    def __init__(self, failing: set[int]) -> None:
        super().__init__()
        self.failing = failing
        self.seen: list[tuple[int, int]] = []

    async def apply(self, conn: Connection, update: InboxRow, prepared: Any) -> list[Reply]:
        self.seen.append((update.chat_key, update.update_id))
        if update.chat_key in self.failing:
            raise RuntimeError(f"cannot handle {update.update_id}")
        return await super().apply(conn, update, prepared)


def states(database_url: str) -> dict[int, tuple[str, int]]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT update_id, state, attempt FROM inbox").fetchall()
    return {u: (s, a) for u, s, a in rows}


def settled(database_url: str, expected: set[str]) -> Callable[[], bool]:
    """True once every update is in one of the `expected` states."""
    return lambda: {s for s, _ in states(database_url).values()} <= expected


async def run_worker(
    database_url: str, handler: Any, until: Callable[[], bool], **config: Any
) -> None:
    """Run a consumer until `until()` holds (checked between waits, 20 s at most)."""
    settings = CommonSettings.read(Reader({"DATABASE_URL": database_url}), "test-worker", 1)
    pool = create_pool(settings)
    await pool.open(wait=True)
    stopping = asyncio.Event()
    worker = InboxConsumer(
        pool,
        handler,
        Notifier(pool),
        asyncio.Event(),
        ConsumerConfig(slots=8, poll_interval=0.05, **config),
    )
    task = asyncio.create_task(worker.run(stopping))
    deadline = asyncio.get_running_loop().time() + 20
    while not await asyncio.to_thread(until):
        assert asyncio.get_running_loop().time() < deadline, "the consumer never got there"
        await asyncio.sleep(0.05)
    stopping.set()
    await task
    await pool.close()


def test_failure__retries_only_that_person_then_dead_releases_them(database_url: str) -> None:
    bot, _, _ = insert_bot(database_url)
    enqueue(database_url, bot, [(1, 10, "a1"), (2, 20, "b1"), (3, 10, "a2"), (4, 20, "b2")])
    handler = FailingFor({10})
    asyncio.run(
        run_worker(
            database_url,
            handler,
            settled(database_url, {"done", "dead"}),
            max_attempts=3,
            backoff_base=0.05,
        )
    )
    result = states(database_url)
    # Person 20 was never held up.
    assert result[2] == ("done", 1) and result[4] == ("done", 1)
    # Person 10's first update failed three times and died; the second was then handled.
    assert result[1] == ("dead", 3)
    assert result[3][0] == "dead"
    assert [u for k, u in handler.seen if k == 10][:3] == [1, 1, 1]
    with psycopg.connect(database_url) as conn:
        error = conn.execute("SELECT last_error FROM inbox WHERE update_id = 1").fetchone()
        replies = conn.execute("SELECT count(*) FROM outbox").fetchone()
    assert error is not None and "cannot handle 1" in error[0]
    # Only person 20's two replies: a failed attempt writes nothing.
    assert replies == (2,)


@pytest.mark.process
def test_dead_updates__listed_and_replayed_by_command_and_endpoint(database_url: str) -> None:
    bot, _, _ = insert_bot(database_url)
    enqueue(database_url, bot, [(1, 10, "a1"), (2, 11, "b1")])
    asyncio.run(
        run_worker(
            database_url, FailingFor({10, 11}), settled(database_url, {"dead"}), max_attempts=1
        )
    )
    assert {s for s, _ in states(database_url).values()} == {"dead"}
    with psycopg.connect(database_url) as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM inbox ORDER BY update_id").fetchall()]

    def replay_command() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "botedge", "replay", str(ids[0])],
            env=service_env(database_url),
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )

    replayed = replay_command()
    assert replayed.returncode == 0, replayed.stderr
    # Once waiting again it is no longer dead: a second replay refuses.
    assert replay_command().returncode == 1

    settings = load(service_env(database_url), "api")
    auth = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
    with serve_in_thread(create_api_app(settings)) as api:
        dead = HTTP.get(f"{api}/internal/inbox/dead", headers=auth).json()
        assert [d["update_id"] for d in dead] == [2]
        assert HTTP.get(f"{api}/internal/inbox/dead").status_code == 401
        assert HTTP.post(f"{api}/internal/inbox/{ids[1]}/replay", headers=auth).status_code == 200
        assert HTTP.post(f"{api}/internal/inbox/{ids[1]}/replay", headers=auth).status_code == 404
    asyncio.run(run_worker(database_url, BotLogic(), settled(database_url, {"done"})))
    assert {s for s, _ in states(database_url).values()} == {"done"}
