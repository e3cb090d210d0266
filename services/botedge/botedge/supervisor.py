"""The worker process's supervisor: it runs the inbox consumer, a sender and a poller contender
per active bot (reloaded every 5 s), and the queue gauges.

Every worker runs the same thing; the leases decide which one sends (and polls) for each bot.
The send leases are shared out: each worker keeps a presence lease, and with N workers present
none holds more than its share, ceil(bots / N); one over it hands the rest over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from botedge import (
    bot_store,
    bot_texts,
    broadcasts,
    channels,
    errors,
    inbox_store,
    outbox_store,
    rollup,
)
from botedge.bot_texts import OwnTexts
from botedge.consumer import ConsumerConfig, InboxConsumer
from botedge.db import connection
from botedge.events import Event, EventQueue, consume
from botedge.ids import BotId
from botedge.leases import Lease
from botedge.marks import SentMarks
from botedge.metrics import (
    BOTS_SERVED,
    DEAD_UPDATES,
    INBOX_DEPTH,
    INBOX_OLDEST_AGE,
    LISTENING,
    OUTBOX_DEPTH,
    SEND_LEASES,
)
from botedge.outbox_store import OutboxRow
from botedge.pause import BotPause
from botedge.poller import Poller, PreCheckout
from botedge.routing import Handler
from botedge.sender import Limits, Sender
from botedge.settings import BotedgeSettings
from botedge.telegram import BotApi
from botedge.words import Words
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Pool
from shared.lifecycle import sleep_unless_stopped, wait_any
from shared.listen import Listener, Notifier
from shared.secretbox import SecretBox, SecretBoxError

log = logging.getLogger("botedge.supervisor")

BOTS_REFRESH = 5.0
# release_lease's NOTIFY, with the lease's name.
LEASE_RELEASED = "lease"


@dataclass(frozen=True)
class WorkerParts:
    """What a worker is built from (`app.compose_worker`): its clients and notices, what
    handles each update, the event queues it works through and the broadcasts' fan-out.
    `tokens` is shared with what reads Telegram for a bot: the supervisor fills it as bots
    load."""

    api: BotApi
    box: SecretBox
    holder: str
    notifier: Notifier
    listener: Listener
    tokens: dict[int, str]
    handler: Handler
    pre_checkout: PreCheckout
    queues: tuple[tuple[EventQueue, Callable[[Event], Awaitable[None]]], ...]
    fan_out: broadcasts.FanOut
    # The bot's words in every language, loaded once, and what owners wrote in their place.
    words: Words
    texts: OwnTexts


class WorkerSupervisor:
    def __init__(
        self,
        settings: BotedgeSettings,
        pool: Pool,
        parts: WorkerParts,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.pool = pool
        self.api = parts.api
        self.box = parts.box
        self.holder = parts.holder
        self.notifier = parts.notifier
        self.listener = parts.listener
        self.tokens = parts.tokens
        self.pre_checkout = parts.pre_checkout
        self.queues = parts.queues
        self.fan_out = parts.fan_out
        # Their Telegram ids beside their tokens, for asking about the bot itself.
        self.identities: dict[int, tuple[int, str]] = {}
        LISTENING.set_function(lambda: float(self.listener.connected.is_set()))
        self.stopping = asyncio.Event()
        self.consumer = InboxConsumer(
            pool,
            parts.handler,
            self.notifier,
            asyncio.Event(),
            ConsumerConfig(
                slots=settings.worker_slots,
                lock_seconds=settings.lock_seconds,
                max_attempts=settings.max_attempts,
                poll_interval=settings.poll_interval,
                backoff_base=settings.retry_base,
                retry_window=settings.gate_retry_window,
                affinity=settings.affinity_seconds,
            ),
            self.holder,
            deliver=self._deliver,
            own=lambda: list(self.senders),
            clock=clock,
            words=parts.words,
            texts=parts.texts,
        )
        self.texts = parts.texts
        self.listener.subscribe(bot_texts.CHANNEL, self.texts.announced)
        self.listener.on_reconnect(self.texts.reconnected)
        self.listener.subscribe("inbox", self.consumer.announced)
        # What was announced while the connection was down is claimed now.
        self.listener.on_reconnect(self.consumer.wakeup.set)
        # Every sender of this worker records its sends through one group commit.
        self.marks = SentMarks(pool, clock)
        # This worker's senders, by bot, while they run (while it holds their send leases).
        self.senders: dict[int, Sender] = {}
        # How many send leases it may hold (None until the workers present are known: any),
        # and one take at a time, so that leases freed at once are not all taken over it.
        self.share: int | None = None
        self.send_takes = asyncio.Lock()
        self.presence = Lease(
            pool, f"worker:{self.holder}", self.holder, settings.presence_seconds, clock
        )
        SEND_LEASES.labels("held").set_function(lambda: len(self.senders))
        SEND_LEASES.labels("share").set_function(lambda: float(self.share or 0))
        self.contenders: dict[str, asyncio.Task[None]] = {}
        # One per bot, shared by its sender and poller: a 429 to either quiets both.
        self.pauses: dict[int, BotPause] = {}
        self.tasks: list[asyncio.Task[None]] = []
        self.listener.subscribe(broadcasts.CANCELLED, broadcasts.drop_on_cancel(self._drop_sends))

    async def start(self) -> None:
        self.listener.start()
        try:
            await self.texts.load()
        except errors.BotedgeError as error:
            log.warning("could not read the owners' texts yet: %s", error)
        # Present before any lease is asked for (a lease is asked for only while it is).
        try:
            await self.presence.take_or_renew()
        except errors.BotedgeError as error:
            log.warning("could not announce this worker yet: %s", error)
        loop = asyncio.get_running_loop()
        self.tasks = [
            loop.create_task(self._heartbeat()),
            loop.create_task(self.consumer.run(self.stopping)),
            loop.create_task(self._supervise_bots()),
            loop.create_task(self._gauges()),
            loop.create_task(self.fan_out.run(self.stopping)),
            *(
                loop.create_task(
                    consume(queue, handle, self.stopping, poll_interval=self.settings.poll_interval)
                )
                for queue, handle in self.queues
            ),
        ]

    async def stop(self, deadline: float) -> None:
        """Stop claiming, finish what is in hand within `deadline` seconds, release leases."""
        self.stopping.set()
        everything = [*self.tasks, *self.contenders.values()]
        pending: set[asyncio.Task[None]] = set()
        if everything:
            _, pending = await asyncio.wait(everything, timeout=deadline)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        with contextlib.suppress(errors.BotedgeError):
            await self.presence.release()
        await self.notifier.close()
        await self.listener.stop()

    async def _supervise_bots(self) -> None:
        while not self.stopping.is_set():
            try:
                async with connection(self.pool) as conn:
                    bots = await bot_store.active_bots(conn, self.box)
            except (errors.BotedgeError, SecretBoxError) as error:
                log.warning("could not load bots: %s", error)
                bots = []
            else:
                BOTS_SERVED.set(len(bots))
                self.tokens.clear()
                self.tokens.update({bot.id: bot.token for bot in bots})
                self.identities.clear()
                self.identities.update({b.id: (b.telegram_bot_id, b.token) for b in bots})
                await self._share_out(len(bots))
            wanted: dict[str, Callable[[], Awaitable[None]]] = {
                "rights-watch": self._rights_watch,
                "stats-rollup": self._stats_rollup,
            }
            for bot in bots:
                wanted[f"send:{bot.id}"] = self._sender_factory(bot)
                if bot.mode == "polling":
                    wanted[f"poll:{bot.id}"] = self._poller_factory(bot)
            for name, task in list(self.contenders.items()):
                if name not in wanted or task.done():
                    if not task.done():
                        task.cancel()
                    del self.contenders[name]
            for name, run in wanted.items():
                if name not in self.contenders:
                    self.contenders[name] = asyncio.get_running_loop().create_task(
                        self._contend(name, run)
                    )
            # Often enough that shares settle within a lease period of a worker joining.
            refresh = min(BOTS_REFRESH, self.settings.lease_seconds / 6)
            await sleep_unless_stopped(self.stopping, refresh)

    async def _heartbeat(self) -> None:
        """This worker's presence, renewed every third of PRESENCE_SECONDS; and each round,
        what workers whose presence has run out still held, handed on: their send and poll
        leases offered to this worker's contenders at once, their updates in hand made
        claimable. One small statement a round while no worker is gone."""
        window = max(self.settings.lease_seconds, self.settings.lock_seconds)
        present_since = self.clock.monotonic()
        while not self.stopping.is_set():
            leases: list[str] = []
            lapsed = not self.presence.held
            try:
                await self.presence.take_or_renew()
                if lapsed and self.presence.held:
                    # Present again (the database was away): every contender asks for its
                    # lease now, not at its next try a third of LEASE_SECONDS away.
                    leases = list(self.contenders)
                    present_since = self.clock.monotonic()
                # Another worker is judged gone only after this one has been present a whole
                # PRESENCE_SECONDS: back from the same outage, the other renews its presence
                # and records the sends it made meanwhile before it can be judged.
                judging = self.clock.monotonic() - present_since >= self.presence.ttl
                async with connection(self.pool, timeout=self.presence.renew_every) as conn:
                    gone = await bot_store.workers_gone(conn, window) if judging else []
                    if gone:
                        leases += await bot_store.leases_of_the_gone(conn, gone)
                        if await bot_store.end_claims_of_the_gone(conn, gone):
                            self.consumer.wakeup.set()
                await self.consumer.give_back()
            except errors.BotedgeError as error:
                log.warning("could not renew this worker's presence: %s", error)
            # A contender is named as the lease it contends for (`send:<bot>`, `poll:<bot>`).
            for name in leases:
                if name in self.contenders:
                    self.listener.event(LEASE_RELEASED, name).set()
            await sleep_unless_stopped(self.stopping, self.presence.renew_every)

    async def _share_out(self, bots: int) -> None:
        """This worker's share of the send leases, from the workers present now; over it, the
        senders of its highest bot ids hand over (their sends in hand finish first)."""
        try:
            async with connection(self.pool, timeout=5) as conn:
                workers = await bot_store.live_workers(conn)
        except errors.BotedgeError as error:
            log.warning("could not count the workers: %s", error)
            return
        self.share = -(-bots // max(1, workers))
        for bot_id in sorted(self.senders)[self.share :]:
            sender = self.senders[bot_id]
            if not sender.closing:
                log.info("bot %d: handing its sends over (share %d)", bot_id, self.share)
                sender.hand_over()

    def _may_send(self) -> bool:
        return self.share is None or len(self.senders) < self.share

    def _pause(self, bot_id: BotId) -> BotPause:
        if bot_id not in self.pauses:
            self.pauses[bot_id] = BotPause(self.pool, bot_id, self.clock)
        return self.pauses[bot_id]

    def _sender_factory(self, bot: bot_store.BotRecord) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            settings = self.settings
            lease = Lease(
                self.pool,
                f"send:{bot.id}",
                self.holder,
                settings.lease_seconds,
                self.clock,
                bound=self.presence,
            )
            limits = Limits(
                per_second=settings.send_rate,
                private_rate=settings.send_private_rate,
                group_per_minute=settings.send_group_per_minute,
                clock=self.clock,
            )

            async def send() -> bool:
                sender = self.senders[bot.id] = Sender(
                    self.pool,
                    self.api,
                    bot.id,
                    bot.token,
                    lease,
                    self.listener.event("outbox", str(bot.id)),
                    self._pause(bot.id),
                    limits=limits,
                    poll_interval=settings.poll_interval,
                    lanes=settings.send_lanes,
                    clock=self.clock,
                    marks=self.marks,
                )
                try:
                    await sender.run(self.stopping)
                finally:
                    if self.senders.get(bot.id) is sender:
                        del self.senders[bot.id]
                return sender.invalid

            await self._while_holding(lease, send, self._may_send, self.send_takes)

        return run

    def _deliver(self, bot_id: BotId, rows: list[OutboxRow], earlier: list[int]) -> bool:
        """Replies this worker just queued go straight to its sender of the bot, if any."""
        sender = self.senders.get(bot_id)
        return sender is not None and sender.offer(rows, earlier)

    def _drop_sends(self, bot_id: BotId, broadcast_id: int) -> None:
        sender = self.senders.get(bot_id)
        if sender is not None:
            sender.drop_broadcast(broadcast_id)

    async def _rights_watch(self) -> None:
        """Every bot's rights in its channels, asked again each RIGHTS_CHECK_INTERVAL."""

        async def check() -> None:
            checked = await channels.recheck_all(
                self.pool, self.api, dict(self.identities), self.clock.now()
            )
            log.info("rights watch: %d channel rows checked", checked)

        await self._periodic("rights-watch", self.settings.rights_check_interval, check)

    async def _stats_rollup(self) -> None:
        """The statistics' closed hours counted, each STATS_INTERVAL."""

        async def count() -> None:
            hours = await rollup.roll_up(self.pool, keep_days=self.settings.stat_days)
            if hours:
                log.info("stats roll-up: %d hours closed", hours)

        await self._periodic("stats-rollup", self.settings.stats_interval, count)

    async def _periodic(
        self, name: str, interval: float, work: Callable[[], Awaitable[None]]
    ) -> None:
        """`work` each `interval` seconds by one worker at a time, under the lease `name`."""
        lease = Lease(self.pool, name, self.holder, self.settings.lease_seconds, self.clock)

        async def rounds() -> None:
            while not self.stopping.is_set() and lease.held:
                try:
                    await work()
                except errors.BotedgeError as error:
                    log.warning("%s: %s", name, error)
                await self._sleep_holding(lease, interval)

        await self._while_holding(lease, rounds)

    async def _sleep_holding(self, lease: Lease, seconds: float) -> None:
        """Wait `seconds`, keeping the lease renewed meanwhile."""
        deadline = self.clock.monotonic() + seconds
        while not self.stopping.is_set() and lease.held:
            left = deadline - self.clock.monotonic()
            if left <= 0:
                return
            await sleep_unless_stopped(self.stopping, min(left, lease.renew_every))
            try:
                await lease.take_or_renew()
            except errors.BotedgeError as error:
                log.warning("lease %s: %s", lease.name, error)

    def _poller_factory(self, bot: bot_store.BotRecord) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            lease = Lease(
                self.pool,
                f"poll:{bot.id}",
                self.holder,
                self.settings.lease_seconds,
                self.clock,
                bound=self.presence,
            )
            await self._while_holding(
                lease,
                lambda: Poller(
                    self.pool,
                    self.api,
                    self.notifier,
                    bot.id,
                    bot.token,
                    bot.poll_offset,
                    lease,
                    self._pause(bot.id),
                    poll_timeout=self.settings.poll_timeout,
                    clock=self.clock,
                    pre_checkout=self.pre_checkout,
                ).run(self.stopping),
            )

        return run

    async def _while_holding(
        self,
        lease: Lease,
        work: Callable[[], Awaitable[bool | None]],
        may_take: Callable[[], bool] = lambda: True,
        one_at_a_time: asyncio.Lock | None = None,
    ) -> None:
        """Contend for the lease (when `may_take`, asked and taken under `one_at_a_time`, and
        `work` starts before the next is asked); do the work while it is ours; hand it back
        when the work ends with the lease still ours (on stop, or handed over). Work that
        ends saying True is over for this bot (Telegram refused its token): the lease is not
        asked for again, and the bot is served again only once the owner gives it a token
        that works (`active_bots` leaves it out meanwhile)."""
        released = self.listener.event(LEASE_RELEASED, lease.name)
        while not self.stopping.is_set():
            taken = False
            released.clear()
            async with one_at_a_time or contextlib.nullcontext():
                if may_take():
                    try:
                        taken = await lease.take_or_renew()
                    except errors.BotedgeError as error:
                        log.warning("lease %s: %s", lease.name, error)
            if taken:
                log.info("holding %s", lease.name)
                over = False
                try:
                    over = bool(await work())
                finally:
                    if lease.held:
                        with contextlib.suppress(errors.BotedgeError):
                            await lease.release()
                if self.stopping.is_set() or over:
                    return
            # Until the holder lets go, or the next try.
            await wait_any(lease.renew_every, released, self.stopping)

    async def _contend(self, name: str, run: Callable[[], Awaitable[None]]) -> None:
        try:
            await run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s stopped on an error", name)

    async def _gauges(self) -> None:
        while not self.stopping.is_set():
            try:
                async with connection(self.pool) as conn:
                    queues = await inbox_store.queue_gauges(conn)
                    sends = await outbox_store.depths(conn)
                    dead = await inbox_store.dead_counts(conn)
                for gauge in (INBOX_DEPTH, INBOX_OLDEST_AGE, OUTBOX_DEPTH, DEAD_UPDATES):
                    gauge.clear()
                for queue in queues:
                    INBOX_DEPTH.labels(str(queue.bot_id)).set(queue.depth)
                    INBOX_OLDEST_AGE.labels(str(queue.bot_id)).set(queue.oldest_age)
                for bot_id, depth in sends.items():
                    OUTBOX_DEPTH.labels(str(bot_id)).set(depth)
                for bot_id, count in dead.items():
                    DEAD_UPDATES.labels(str(bot_id)).set(count)
            except errors.BotedgeError as error:
                log.warning("could not read queue gauges: %s", error)
            await sleep_unless_stopped(self.stopping, self.settings.gauges_interval)
