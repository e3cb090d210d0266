"""The inbox consumer: claim and handle updates, each person's in order, people in parallel.

N slots (default 64), most of their time waiting on Telegram; a slot takes a pool connection
only for its statements. A claim runs when updates of its own bots are announced (NOTIFY
inbox; another worker's bots' once their affinity is over), when a finished update's person has
another one waiting, when a retried one is due, and, after a claim that filled every free slot,
as soon as a quarter of them are free again. One transaction per update
writes the person, the effects and the replies, and finishes the row by compare-and-set on its
claim token. A failure retries with exponential backoff and jitter, delaying only that person;
after the last attempt the update is dead and the person moves on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from botedge import errors, inbox_store
from botedge.bot_texts import OwnTexts
from botedge.db import connection
from botedge.errors import RetryLater
from botedge.ids import BotId
from botedge.metrics import HANDLING_SECONDS, INBOX_CLAIMS, REPLIES_QUEUED, UPDATES_HANDLED
from botedge.outbox_store import OutboxRow, Reply
from botedge.routing import Handler
from botedge.telegram import parked_delay
from botedge.updates import InboxRow
from botedge.words import Speech, Words, msg
from shared.backoff import backoff_delay
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Pool, pipelined_transaction
from shared.lifecycle import sleep_unless_stopped, wait_any
from shared.listen import Notifier
from shared.logging import request_id
from shared.tasks import retrieve

log = logging.getLogger("botedge.consumer")

# To a person told to wait (a `RetryLater` notice) whose update then died.
GAVE_UP = msg("gave_up", "Sorry, we could not get that done after all. Please try again.")


@dataclass(frozen=True)
class ConsumerConfig:
    slots: int = 64
    lock_seconds: float = 60.0
    max_attempts: int = 5
    poll_interval: float = 1.0
    backoff_base: float = 1.0
    backoff_cap: float = 300.0
    # How long an update Telegram could not be asked about keeps being retried, past
    # max_attempts; and the longest wait between those tries.
    retry_window: float = 600.0
    transient_cap: float = 15.0
    affinity: float = inbox_store.AFFINITY_SECONDS


class InboxConsumer:
    def __init__(
        self,
        pool: Pool,
        handler: Handler,
        notifier: Notifier,
        wakeup: asyncio.Event,
        config: ConsumerConfig,
        holder: str = "",
        deliver: Callable[[BotId, list[OutboxRow], list[int]], bool] = lambda *_: False,
        own: Callable[[], list[int]] = list,
        clock: Clock = SYSTEM_CLOCK,
        words: Words | None = None,
        texts: OwnTexts | None = None,
    ) -> None:
        """`deliver(bot_id, rows, earlier)` hands replies just queued to a sender in this
        process; False when none of this process is sending for the bot, or it lacks one of
        the `earlier` rows. `own()`: the bots this process sends for, whose updates it
        claims first."""
        self.pool = pool
        self.clock = clock
        self.words = words or Words()
        # The owners' texts in `words`, read anew when an update's bot has newer ones.
        self.texts = texts
        self.deliver = deliver
        self.own = own
        self.holder = holder
        self.handler = handler
        self.notifier = notifier
        self.wakeup = wakeup
        self.config = config
        self.in_flight: set[asyncio.Task[None]] = set()
        # Claims whose failure could not be recorded (the database away), by update id with
        # their lock token: given back once it answers again (`give_back`), not left until
        # WORKER_LOCK_SECONDS run out.
        self.unreturned: dict[int, uuid.UUID] = {}
        self._slot_freed = asyncio.Event()
        # Set when a finished update's person has another one waiting: it can be claimed now.
        self._more = asyncio.Event()
        self._later: asyncio.TimerHandle | None = None

    def announced(self, payload: str) -> None:
        """NOTIFY inbox; the payload is the bot's id. A fresh update of a bot another worker
        sends for is left to that worker for `affinity` seconds (the claim's rule), so a claim
        for it now would find nothing: the wake-up for it comes when that time is over."""
        affinity = self.config.affinity
        if affinity <= 0 or not payload.isdigit() or int(payload) in self.own():
            self.wakeup.set()
        elif self._later is None:
            self._later = asyncio.get_running_loop().call_later(affinity, self._wake_later)

    def _wake_later(self) -> None:
        self._later = None
        self.wakeup.set()

    async def claim(self, limit: int) -> list[InboxRow] | None:
        async with connection(self.pool) as conn:
            claimed = await inbox_store.claim(
                conn, limit, self.config.lock_seconds, self.holder, self.own(), self.config.affinity
            )
        INBOX_CLAIMS.labels("updates" if claimed else "none").inc()
        return claimed

    async def run(self, stopping: asyncio.Event) -> None:
        slots = self.config.slots
        quarter = max(1, slots // 4)
        while not stopping.is_set():
            free = slots - len(self.in_flight)
            claimed: list[InboxRow] = []
            if free >= quarter:
                try:
                    result = await self.claim(free)
                except errors.BotedgeError as error:
                    log.warning("claim failed: %s", error)
                    await sleep_unless_stopped(stopping, self.config.poll_interval)
                    continue
                if result is None:
                    await asyncio.sleep(0.01)
                    continue
                claimed = result
                for update in claimed:
                    task = asyncio.get_running_loop().create_task(self.handle(update))
                    self.in_flight.add(task)
                    task.add_done_callback(self._done)
                    task.add_done_callback(
                        retrieve(log, f"bot {update.bot_id} update {update.update_id}")
                    )
            if (claimed and len(claimed) == free) or free < quarter:
                # Possibly more waiting: claim again once a quarter of the slots are free.
                await self._wait(stopping, for_slot=True)
            else:
                # Nothing more was claimable. New updates announce themselves (NOTIFY inbox)
                # and a person's next one becomes claimable when theirs is finished (`_more`):
                # a freed slot alone is no reason to ask again.
                await self._wait(stopping, for_slot=False)
        await self.drain()

    async def drain(self) -> None:
        if self.in_flight:
            await asyncio.gather(*self.in_flight, return_exceptions=True)

    def _done(self, task: asyncio.Task[None]) -> None:
        self.in_flight.discard(task)
        self._slot_freed.set()

    async def _wait(self, stopping: asyncio.Event, *, for_slot: bool) -> None:
        events = [self.wakeup, self._more, stopping]
        if for_slot:
            events.append(self._slot_freed)
        await wait_any(self.config.poll_interval, *events)
        self.wakeup.clear()
        self._more.clear()
        self._slot_freed.clear()

    async def handle(self, update: InboxRow) -> None:
        token = request_id.set(f"update-{update.bot_id}-{update.update_id}")
        started = time.perf_counter()
        outcome = "done"
        try:
            budget = self.config.lock_seconds * 0.8
            if self.texts is not None:
                await self.texts.ready(update.bot_id, update.texts_version)
            prepared = await asyncio.wait_for(self.handler.prepare(update), budget)
            settled = self.handler.settle(update, prepared)
            say = self.words.speech(update.language, update.bot_id)
            async with connection(self.pool) as conn:
                if settled is not None:
                    # Its person, replies and finish in one statement: its own transaction.
                    replies = _begun(settled.replies, say)
                    finished = await inbox_store.finish(
                        conn, update, self.clock.now(), replies, settled.person
                    )
                else:
                    # Pipelined: BEGIN goes with the first statement and COMMIT with the last.
                    async with pipelined_transaction(conn):
                        replies = _begun(await self.handler.apply(conn, update, prepared), say)
                        now = self.clock.now()
                        finished = await inbox_store.finish(conn, update, now, replies)
                # Nothing else in this process has run since COMMIT's answer came back (the
                # rows are in hand, no await waits): here, the hand-over comes before a later
                # update of this person can be claimed and before a read could show the rows.
                queued, earlier, more = await finished.read()
                if replies:
                    self._hand_over(update.bot_id, queued, earlier, len(replies))
                if more:
                    self._more.set()
        except errors.BotedgeError as error:
            if inbox_store.claim_lost(error):
                outcome = "lost"
                log.warning("update %d: claim lost before commit; rolled back", update.id)
            else:
                outcome = await self._fail(update, error)
        except Exception as error:
            outcome = await self._fail(update, error)
        finally:
            HANDLING_SECONDS.observe(time.perf_counter() - started)
            UPDATES_HANDLED.labels(outcome).inc()
            request_id.reset(token)

    def _hand_over(
        self, bot_id: BotId, rows: list[OutboxRow], earlier: list[int], replies: int
    ) -> None:
        """To this worker's sender of the bot when it is sending and holds every older unsent
        row of the same chats (`earlier`); otherwise a wake-up for whichever worker's is,
        whose read brings each chat's rows in order."""
        if len(rows) == replies and self.deliver(bot_id, rows, earlier):
            REPLIES_QUEUED.labels("hand-over").inc(replies)
        else:
            REPLIES_QUEUED.labels("notify").inc(replies)
            self.notifier.announce("outbox", str(bot_id))

    def _told(self, update: InboxRow, told: bool) -> None:
        if told:
            REPLIES_QUEUED.labels("notify").inc()
            self.notifier.announce("outbox", str(update.bot_id))

    def _within_window(self, update: InboxRow) -> bool:
        if update.received_at is None:
            return False
        age = (dt.datetime.now(dt.UTC) - update.received_at).total_seconds()
        return age < self.config.retry_window

    async def give_back(self) -> None:
        """The claims whose failure could not be recorded, claimable again now."""
        if not self.unreturned:
            return
        taken = dict(self.unreturned)
        async with connection(self.pool, timeout=5) as conn:
            given = await inbox_store.give_back(conn, taken)
        for update_id in taken:
            self.unreturned.pop(update_id, None)
        if given:
            self.wakeup.set()

    async def _fail(self, update: InboxRow, error: BaseException) -> str:
        description = f"{type(error).__name__}: {error}"[:1000]
        say = self.words.speech(update.language, update.bot_id)
        waiting = error.notice if isinstance(error, RetryLater) else None
        notice = None if waiting is None else say(waiting)
        parked = parked_delay(error)
        if parked is not None:
            return await self._park(update, description, parked, notice)
        transient = isinstance(error, RetryLater) and self._within_window(update)
        last = update.attempt >= self.config.max_attempts and not transient
        told = False
        try:
            async with connection(self.pool) as conn:
                if last:
                    # Told to wait for an answer, the person hears that none is coming.
                    gave_up = say(GAVE_UP) if update.told_waiting else None
                    told = await inbox_store.bury(
                        conn, update, description, self.clock.now(), notice=gave_up
                    )
                else:
                    delay = backoff_delay(
                        update.attempt,
                        base=self.config.backoff_base,
                        cap=self.config.transient_cap if transient else self.config.backoff_cap,
                        jitter=True,
                    )
                    if isinstance(error, RetryLater):
                        # Telegram's retry_after is the least wait.
                        delay = max(delay, error.retry_after)
                    told = await inbox_store.retry(conn, update, description, delay, notice=notice)
        except errors.BotedgeError as db_error:
            # Given back once the database answers again (or its claim runs out): nothing is
            # lost.
            log.error("update %d: could not record failure: %s", update.id, db_error)
            self.unreturned[update.id] = update.lock_token
            return "error"
        if last:
            log.error(
                "update %d dead after %d attempts: %s", update.id, update.attempt, description
            )
            # The person's next update, if any, is theirs to claim now.
            self._more.set()
            self._told(update, told)
            return "dead"
        # Claimable again once the delay is over.
        asyncio.get_running_loop().call_later(delay, self._more.set)
        self._told(update, told)
        log.warning("update %d attempt %d failed: %s", update.id, update.attempt, description)
        return "retry"

    async def _park(
        self, update: InboxRow, description: str, delay: float, notice: str | None
    ) -> str:
        """A dependency (Telegram for its bot, billing) is failing and its breaker is open:
        the update waits in the inbox until the breaker's probe, in its place in the person's
        order, spending no try."""
        try:
            async with connection(self.pool) as conn:
                told = await inbox_store.retry(
                    conn, update, description, delay, parked=True, notice=notice
                )
        except errors.BotedgeError as db_error:
            log.error("update %d: could not park: %s", update.id, db_error)
            return "error"
        asyncio.get_running_loop().call_later(delay, self._more.set)
        self._told(update, told)
        log.info("update %d parked for %.1f s: %s", update.id, delay, description)
        return "parked"


def _begun(replies: list[Reply], say: Speech) -> list[Reply]:
    """Each reply's text begun in its person's language's direction (`Speech.start`)."""
    if not say.right_to_left:
        return replies
    return [dataclasses.replace(r, payload=say.begun(r.payload)) for r in replies]
