"""Webhook delivery as Telegram does it: a queue per chat (per user for callbacks), each posted
in order with one update in flight, up to the bot's `max_connections` queues at once; a
non-2xx answer is retried with backoff and holds up only its own queue."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, cast
from urllib.parse import urlsplit

import httptools
import msgspec

from simulators.telegram.state import Bot, World, queue_key

QueueKey = tuple[str, int]


# How long a post may take before Telegram gives it up and tries again.
POST_TIMEOUT = 60.0


class _Connection(asyncio.Protocol):
    """One kept-alive connection to a webhook: a request written, its answer's status read."""

    def __init__(self) -> None:
        self.transport: asyncio.WriteTransport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.answer: asyncio.Future[int] | None = None
        self.reusable = True
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.WriteTransport, transport)

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._fail(error)
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(exc or ConnectionResetError("closed by the webhook's server"))

    def on_message_complete(self) -> None:
        self.reusable = self.parser.should_keep_alive()
        if self.answer is not None and not self.answer.done():
            self.answer.set_result(self.parser.get_status_code())

    def _fail(self, error: BaseException) -> None:
        if self.answer is not None and not self.answer.done():
            self.answer.set_exception(error)

    async def exchange(self, request: bytes, timeout: float) -> int:
        if self.transport is None or self.closed:
            raise ConnectionResetError("not connected")
        loop = asyncio.get_running_loop()
        self.answer = loop.create_future()
        # A timer handle, cheaper than asyncio.timeout() around the await.
        timer = loop.call_later(timeout, self._timed_out)
        self.transport.write(request)
        try:
            return await self.answer
        finally:
            timer.cancel()

    def _timed_out(self) -> None:
        self._fail(TimeoutError("no answer in time"))
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class _Poster:
    """POSTs to one webhook URL (plain HTTP, as the simulator's bots are set) over kept-alive
    connections, and nothing more: aiohttp's client, doing the same, took 29% of the
    simulator's CPU under the reference load."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"the simulator posts to http:// webhooks only, not {url!r}")
        self.url = url
        self.host, self.port = parts.hostname, parts.port or 80
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.head = f"POST {target} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        self.idle: list[_Connection] = []

    async def post(self, body: bytes, secret: str | None) -> int | None:
        """The answer's status; None when none came (refused, cut off, timed out)."""
        head = self.head + "Content-Type: application/json\r\n"
        if secret:
            head += f"X-Telegram-Bot-Api-Secret-Token: {secret}\r\n"
        request = f"{head}Content-Length: {len(body)}\r\n\r\n".encode("latin-1") + body
        try:
            while self.idle:
                conn = self.idle.pop()
                if conn.closed:
                    continue
                try:
                    return await self._exchange(conn, request)
                except ConnectionError:
                    # Closed by the server since it was last used, before it answered: one
                    # more try, on the next, as a client library's pool does. Not after a
                    # timeout: that post was given its time.
                    continue
            _, conn = await asyncio.get_running_loop().create_connection(
                _Connection, self.host, self.port
            )
            return await self._exchange(conn, request)
        except (OSError, TimeoutError, httptools.HttpParserError):
            return None

    async def _exchange(self, conn: _Connection, request: bytes) -> int:
        try:
            status = await conn.exchange(request, POST_TIMEOUT)
        except BaseException:
            conn.close()
            raise
        if conn.reusable and not conn.closed:
            self.idle.append(conn)
        else:
            conn.close()
        return status

    def close(self) -> None:
        for conn in self.idle:
            conn.close()
        self.idle.clear()


class Deliveries:
    """One delivery task per bot with a webhook, started when it has something to post."""

    def __init__(self, world: World) -> None:
        self.world = world

    def start(self, bot: Bot) -> None:
        if bot.webhook_url and (bot.delivering is None or bot.delivering.done()):
            bot.delivering = asyncio.get_running_loop().create_task(self._deliver(bot))

    async def close(self) -> None:
        self.world.closing.set()
        running = [bot.delivering for bot in self.world.bots.values() if bot.delivering]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    async def _deliver(self, bot: Bot) -> None:
        queues = _Queues(self.world, bot)
        try:
            while bot.webhook_url and not self.world.closing.is_set():
                queues.take_new()
                await queues.wait()
        finally:
            await queues.stop()
            if not bot.webhook_url:
                bot.release_held()


class _Queues:
    """One bot's per-chat queues, and the posters working them: each takes a queue that is
    ready, posts its first update until it is taken, and puts the queue back if more wait.
    Posters are started as queues wait, up to the bot's `max_connections`, and kept: a task
    an update, and a wake-up of the delivery loop after each post, cost the simulator more
    than the post."""

    def __init__(self, world: World, bot: Bot) -> None:
        self.world = world
        self.bot = bot
        self.poster: _Poster | None = None
        self.ready: asyncio.Queue[QueueKey] = asyncio.Queue()
        self.busy: set[QueueKey] = set()
        self.posters: set[asyncio.Task[None]] = set()
        self.idle = 0

    def take_new(self) -> None:
        bot = self.bot
        while bot.updates:
            update = bot.updates.popleft()
            key = queue_key(update)
            queue = bot.held.setdefault(key, deque())
            if not queue and key not in self.busy:
                self.ready.put_nowait(key)
            queue.append(update)
        # A poster for each queue waiting that no idle poster will take.
        loop = asyncio.get_running_loop()
        while self.ready.qsize() > self.idle and len(self.posters) < self.bot.max_connections:
            task = loop.create_task(self._work())
            self.posters.add(task)
            task.add_done_callback(self.posters.discard)

    async def wait(self) -> None:
        self.bot.new_updates.clear()
        await self.bot.new_updates.wait()

    async def stop(self) -> None:
        for task in list(self.posters):
            task.cancel()
        await asyncio.gather(*self.posters, return_exceptions=True)
        if self.poster is not None:
            self.poster.close()

    async def _work(self) -> None:
        bot = self.bot
        while self._delivering():
            if len(self.posters) > bot.max_connections:
                # setWebhook lowered it: one poster fewer, each as it finishes a post.
                self.posters.discard(cast("asyncio.Task[None]", asyncio.current_task()))
                return
            self.idle += 1
            try:
                key = await self.ready.get()
            finally:
                self.idle -= 1
            if key in self.busy:
                continue
            self.busy.add(key)
            try:
                await self._post(key)
            finally:
                self.busy.discard(key)

    def _delivering(self) -> bool:
        return bool(self.bot.webhook_url) and not self.world.closing.is_set()

    async def _post(self, key: QueueKey) -> None:
        """Post the queue's first update until it is taken; the queue goes back to wait its
        turn if more is in it."""
        bot = self.bot
        delay = 0.0
        while self._delivering():
            queue = bot.held.get(key)
            if not queue:
                return
            update = queue[0]
            if await self._posted(update):
                if queue and queue[0] is update:
                    queue.popleft()
                if queue:
                    self.ready.put_nowait(key)
                elif bot.held.get(key) is queue:
                    del bot.held[key]
                return
            delay = min(5.0, max(0.05, delay * 2 or 0.05))
            await asyncio.sleep(delay)

    async def _posted(self, update: dict[str, Any]) -> bool:
        url = self.bot.webhook_url
        if not url:
            return False
        if self.poster is None or self.poster.url != url:
            if self.poster is not None:
                self.poster.close()
            self.poster = _Poster(url)
        status = await self.poster.post(msgspec.json.encode(update), self.bot.webhook_secret)
        return status is not None and 200 <= status < 300
