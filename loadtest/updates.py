"""The update path under an open-loop load: made-up people open a gated content link
(`/start promo`) at a steady rate, whatever the system's pace, and each should get exactly one
answer (the gate message: two `getChatMember` calls, then a `sendMessage`).

Set-up goes through the project's own endpoints: panel-api adds the bots (in webhook mode,
through botedge), their two sponsor channels, each bot's default gate and the content.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import httpx
import psycopg
from prometheus_client.parser import text_string_to_metric_families

from loadtest.stack import OWNER_EMAIL, OWNER_PASSWORD, Stack
from shared import lifecycle

CHANNELS = ("load_sponsor_a", "load_sponsor_b")
FIRST_BOT = 7_100_000
CONNECTIONS = 8
TICK = 0.02
SEND_METHODS = ("sendmessage", "sendphoto", "editmessagetext", "copymessage")


def token_for(telegram_id: int) -> str:
    return f"{telegram_id}:AA" + f"{telegram_id:x}".rjust(33, "b")


def set_up(stack: Stack, bots: int) -> list[int]:
    """Bots, channels, gates and content through panel-api; the bots' Telegram ids."""
    ids = [FIRST_BOT + n for n in range(bots)]
    with httpx.Client(timeout=60) as client:
        panel = stack.get("panel-api").url
        signed_in = client.post(
            f"{panel}/v1/auth/login", json={"email": OWNER_EMAIL, "password": OWNER_PASSWORD}
        )
        signed_in.raise_for_status()
        client.headers["Authorization"] = f"Bearer {signed_in.json()['access_token']}"
        set_up_at(stack.get("telegram").url, panel, client, ids, "webhook")
    return ids


def set_up_at(sim: str, panel: str, client: httpx.Client, ids: list[int], mode: str) -> None:
    """The bots with these Telegram ids made in the simulated Telegram at `sim` and added in
    `mode` through the panel at `panel` (`client` signed in as its owner), each gating the
    content `promo` behind the two sponsor channels."""
    for n, name in enumerate(CHANNELS):
        client.post(
            f"{sim}/_sim/chats",
            json={
                "id": -1007100000001 - n,
                "type": "channel",
                "title": name,
                "username": name,
                "admin_bots": ids,
            },
        ).raise_for_status()
    for telegram_id in ids:
        token = token_for(telegram_id)
        client.post(f"{sim}/_sim/bots", json={"token": token}).raise_for_status()
        added = client.post(f"{panel}/v1/bots", json={"token": token, "mode": mode})
        added.raise_for_status()
        bot = int(added.json()["id"])
        channels = []
        for name in CHANNELS:
            found = client.post(f"{panel}/v1/channels", json={"bot_id": bot, "chat": f"@{name}"})
            found.raise_for_status()
            channels.append({"channel_id": int(found.json()["chat"]["id"])})
        client.put(
            f"{panel}/v1/bots/{bot}/default-gate", json={"channels": channels}
        ).raise_for_status()
        client.post(
            f"{panel}/v1/contents",
            json={"bot_id": bot, "kind": "text", "body": "Welcome", "code": "promo"},
        ).raise_for_status()


@dataclass(frozen=True)
class Offer:
    user: int
    bot: int
    at: float  # unix seconds, when it was handed to the simulated Telegram


async def _offer(
    sim: str, bots: list[int], steps: list[tuple[float, float]], first_user: int
) -> list[Offer]:
    """Open loop: the n-th update of a step is due at its time, answered or not. What is due
    goes out at most every TICK seconds as one batch, over CONNECTIONS connections, each its
    own client: a request per update cost this process 1.3 ms of CPU and the simulator
    another request to serve, on the two cores the stack is measured on."""
    offers: list[Offer] = []
    failures: list[str] = []
    due: asyncio.Queue[list[tuple[int, int]] | None] = asyncio.Queue()

    async def connection() -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            while (batch := await due.get()) is not None:
                at = time.time()
                messages = [
                    {"bot_id": bot, "user_id": user, "text": "/start promo"} for user, bot in batch
                ]
                try:
                    answer = await client.post(f"{sim}/_sim/messages", json={"messages": messages})
                    answer.raise_for_status()
                    offers.extend(Offer(user, bot, at) for user, bot in batch)
                except httpx.HTTPError as error:
                    failures.append(str(error))

    loop = asyncio.get_running_loop()
    senders = [loop.create_task(connection()) for _ in range(CONNECTIONS)]
    began = loop.time()
    user = first_user
    batch: list[tuple[int, int]] = []
    for rate, seconds in steps:
        for n in range(int(rate * seconds)):
            wait = began + n / rate - loop.time()
            if wait > 0:
                if batch:
                    due.put_nowait(batch)
                    batch = []
                await asyncio.sleep(max(wait, TICK))
            batch.append((user, bots[user % len(bots)]))
            user += 1
        began += seconds
    if batch:
        due.put_nowait(batch)
    for _ in senders:
        due.put_nowait(None)
    await asyncio.gather(*senders)
    if failures:
        raise SystemExit(f"{len(failures)} batches could not be handed over: {failures[0]}")
    return offers


def offer(
    sim: str, bots: list[int], steps: list[tuple[float, float]], first_user: int
) -> list[Offer]:
    return lifecycle.run(_offer(sim, bots, steps, first_user))


@dataclass
class Backlog:
    """Sampled once a second while the load runs."""

    at: list[float] = field(default_factory=list)
    inbox: list[int] = field(default_factory=list)
    outbox: list[int] = field(default_factory=list)


class BacklogWatch:
    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.backlog = Backlog()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Backlog:
        self.thread.start()
        return self.backlog

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)

    def _run(self) -> None:
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            while not self.stopping.is_set():
                row = conn.execute(
                    "SELECT (SELECT count(*) FROM inbox WHERE state IN ('waiting', 'processing')),"
                    " (SELECT count(*) FROM outbox WHERE state = 'pending')"
                ).fetchone()
                assert row is not None  # noqa: S101 - two counts
                self.backlog.at.append(time.time())
                self.backlog.inbox.append(int(row[0]))
                self.backlog.outbox.append(int(row[1]))
                self.stopping.wait(1.0)


@dataclass
class Update:
    offer: Offer
    received: float | None
    done: float | None
    answers: list[float]

    @property
    def answered(self) -> float | None:
        return min(self.answers) - self.offer.at if self.answers else None


def wait_answered(stack: Stack, users: set[int], timeout: float) -> None:
    """Until every one of `users` has had its update handled and nothing waits to be sent, or
    `timeout` seconds. Asks the database: cheap for it, unlike listing what Telegram got."""
    wait_counted(
        stack,
        "SELECT (SELECT count(*) FROM inbox WHERE state = 'done'"
        "         AND chat_key BETWEEN %s AND %s),"
        " (SELECT count(*) FROM outbox WHERE state = 'pending')",
        (min(users), max(users)),
        len(users),
        timeout,
    )


# Whether anything is still in hand, through the queues' partial indexes: asked while the
# backlog drains, it costs PostgreSQL next to nothing (counting the handled updates there
# cost 0.28 ms of its CPU per update, inside the measured window).
BUSY = (
    "SELECT EXISTS (SELECT 1 FROM inbox WHERE state = 'waiting')"
    " OR EXISTS (SELECT 1 FROM inbox WHERE state = 'processing')"
    " OR EXISTS (SELECT 1 FROM outbox WHERE state = 'pending')"
)


def wait_counted(
    stack: Stack, query: str, params: tuple[object, ...], count: int, timeout: float
) -> None:
    """Until `query` counts at least `count` done and nothing pending (its two columns), or
    `timeout` seconds. `query` is asked only when the queues look idle."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(stack.database_url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            busy = conn.execute(BUSY).fetchone()
            if busy is not None and not busy[0]:
                row = conn.execute(query, params).fetchone()
                if row is not None and row[0] >= count and row[1] == 0:
                    return
            time.sleep(0.2)


def collect(stack: Stack, offers: list[Offer]) -> list[Update]:
    sim = stack.get("telegram").url
    sent = httpx.get(f"{sim}/_sim/sent", timeout=60).json()
    answers: dict[int, list[float]] = defaultdict(list)
    for row in sent:
        answers[int(row["chat_id"])].append(float(row["at"]))
    with psycopg.connect(stack.database_url) as conn:
        rows = conn.execute(
            "SELECT chat_key, extract(epoch FROM received_at), extract(epoch FROM done_at)"
            " FROM inbox WHERE chat_key = ANY(%s)",
            ([o.user for o in offers],),
        ).fetchall()
    seen = {int(r[0]): (float(r[1]), float(r[2]) if r[2] is not None else None) for r in rows}
    return [
        Update(
            o, seen.get(o.user, (None, None))[0], seen.get(o.user, (None, None))[1], answers[o.user]
        )
        for o in offers
    ]


def percentile(values: list[float], p: float) -> float:
    """Nearest rank: a value that was measured."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)] if ordered else float("nan")


@dataclass
class Latency:
    p50: float
    p90: float
    p99: float
    max: float

    @classmethod
    def of(cls, values: list[float]) -> Latency:
        return cls(
            percentile(values, 50),
            percentile(values, 90),
            percentile(values, 99),
            max(values) if values else float("nan"),
        )


@dataclass
class Summary:
    offered: int
    answered_once: int
    unanswered: int
    answered_twice: int
    latency: Latency
    # Where the time went, p99 of each part: to the inbox, in the inbox (waiting and handled),
    # and from the handler's commit to Telegram's answer (the outbox and the send).
    to_inbox: Latency
    in_inbox: Latency
    to_answer: Latency


def summarize(updates: list[Update]) -> Summary:
    answered = [u.answered for u in updates if u.answered is not None]
    return Summary(
        offered=len(updates),
        answered_once=sum(1 for u in updates if len(u.answers) == 1),
        unanswered=sum(1 for u in updates if not u.answers),
        answered_twice=sum(1 for u in updates if len(u.answers) > 1),
        latency=Latency.of(answered),
        to_inbox=Latency.of([u.received - u.offer.at for u in updates if u.received]),
        in_inbox=Latency.of([u.done - u.received for u in updates if u.done and u.received]),
        to_answer=Latency.of([min(u.answers) - u.done for u in updates if u.done and u.answers]),
    )


def bottleneck(summary: Summary) -> str:
    parts = {
        "reaching the inbox (webhook delivery and the api)": summary.to_inbox.p99,
        "the inbox (waiting for a worker, then the handler)": summary.in_inbox.p99,
        "the outbox and the send (after the handler's commit)": summary.to_answer.p99,
    }
    name = max(parts, key=lambda k: parts[k] if not math.isnan(parts[k]) else -1)
    total = summary.latency.p99 * 1000
    return f"{name}: p99 {parts[name] * 1000:.0f} ms of the answer's {total:.0f} ms"


@dataclass
class Handling:
    """Claim to commit, from the workers' histograms (warm-up included): the bucket bounds
    under which half and 99% of the updates were handled."""

    p50: float
    p99: float
    count: int

    def describe(self) -> str:
        return (
            f"handled (claim to commit) within {self.p50 * 1000:g} ms for half and "
            f"{self.p99 * 1000:g} ms for 99% of {self.count}"
        )


def handling_seen(stack: Stack) -> Handling:
    counts: Counter[float] = Counter()
    for worker in stack.workers():
        text = httpx.get(f"{worker.url}/metrics", timeout=10).text
        for family in text_string_to_metric_families(text):
            if family.name != "botedge_update_handling_seconds":
                continue
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    counts[float(sample.labels["le"])] += sample.value
    total = counts[math.inf]
    bounds = sorted(counts)

    def bound(share: float) -> float:
        return next((b for b in bounds if counts[b] >= share * total), math.nan)

    return Handling(bound(0.5), bound(0.99), int(total))


def sends_seen(stack: Stack) -> tuple[dict[int, int], int]:
    """From one read of the simulated Telegram's call log: per bot, the most sends it answered
    within one second; and how many calls it refused with 429."""
    calls = httpx.get(f"{stack.get('telegram').url}/_sim/calls", timeout=60).json()
    per_second: Counter[tuple[int, int]] = Counter(
        (int(c["bot_id"]), int(c["started"]))
        for c in calls
        if c["method"] in SEND_METHODS and c["status"] == 200
    )
    busiest: dict[int, int] = {}
    for (bot, _), count in per_second.items():
        busiest[bot] = max(busiest.get(bot, 0), count)
    return busiest, sum(1 for c in calls if c["status"] == 429)


def per_second(updates: list[Update], began: float) -> dict[str, list[float]]:
    """Offered and answered per second, and p50/p99 of the updates offered in each second."""
    seconds = int(max((u.offer.at for u in updates), default=began) - began) + 1
    offered = [0.0] * seconds
    latencies: list[list[float]] = [[] for _ in range(seconds)]
    answered_at: Counter[int] = Counter()
    for u in updates:
        slot = int(u.offer.at - began)
        if 0 <= slot < seconds:
            offered[slot] += 1
            if u.answered is not None:
                latencies[slot].append(u.answered)
        if u.answers:
            answered_at[int(min(u.answers) - began)] += 1
    end = max(answered_at, default=0) + 1
    return {
        "offered": offered,
        "answered": [float(answered_at[s]) for s in range(max(end, seconds))],
        "p50": [statistics.median(v) if v else float("nan") for v in latencies],
        "p99": [percentile(v, 99) if v else float("nan") for v in latencies],
    }


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: after[name] - before.get(name, 0.0) for name in after}
