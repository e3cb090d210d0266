"""Webhook delivery as Telegram does it: a queue per chat (per user for callbacks), each posted
in order with one update in flight, up to the bot's `max_connections` queues at once; a
non-2xx answer is retried with backoff and holds up only its own queue."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from typing import Any, cast
from urllib.parse import urlsplit

import httptools

from shared.lifecycle import wait_any
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

    async def exchange(self, request: bytes) -> int:
        if self.transport is None or self.closed:
            raise ConnectionResetError("not connected")
        self.answer = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self.answer

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
        # A kept-alive connection the server has since closed fails at once: one more try
        # on a new one, as a client library's pool does.
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed:
                status = await self._exchange(conn, request)
                if status is not None or not conn.closed:
                    return status
        try:
            _, conn = await asyncio.get_running_loop().create_connection(
                _Connection, self.host, self.port
            )
        except OSError:
            return None
        return await self._exchange(conn, request)

    async def _exchange(self, conn: _Connection, request: bytes) -> int | None:
        try:
            async with asyncio.timeout(POST_TIMEOUT):
                status = await conn.exchange(request)
        except (OSError, TimeoutError, httptools.HttpParserError):
            conn.close()
            return None
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
                queues.post_ready()
                await queues.wait()
        finally:
            await queues.stop()
            if not bot.webhook_url:
                bot.release_held()


class _Queues:
    """One bot's per-chat queues and the posts in flight."""

    def __init__(self, world: World, bot: Bot) -> None:
        self.world = world
        self.bot = bot
        self.poster: _Poster | None = None
        self.ready: deque[QueueKey] = deque()
        self.posting: set[asyncio.Task[None]] = set()
        self.busy: set[QueueKey] = set()
        self.changed = asyncio.Event()

    def take_new(self) -> None:
        bot = self.bot
        while bot.updates:
            update = bot.updates.popleft()
            key = queue_key(update)
            queue = bot.held.setdefault(key, deque())
            if not queue and key not in self.busy:
                self.ready.append(key)
            queue.append(update)

    def post_ready(self) -> None:
        while self.ready and len(self.busy) < self.bot.max_connections:
            key = self.ready.popleft()
            if key in self.busy or not self.bot.held.get(key):
                continue
            self.busy.add(key)
            task = asyncio.get_running_loop().create_task(self._post(key))
            self.posting.add(task)
            task.add_done_callback(self.posting.discard)

    async def wait(self) -> None:
        self.bot.new_updates.clear()
        self.changed.clear()
        await wait_any(None, self.bot.new_updates, self.changed, self.world.closing)

    async def stop(self) -> None:
        for task in list(self.posting):
            task.cancel()
        await asyncio.gather(*self.posting, return_exceptions=True)
        if self.poster is not None:
            self.poster.close()

    async def _post(self, key: QueueKey) -> None:
        """Post the queue's first update until it is taken, then hand the queue back."""
        bot = self.bot
        delay = 0.0
        try:
            while bot.webhook_url and not self.world.closing.is_set():
                queue = bot.held.get(key)
                if not queue:
                    return
                update = queue[0]
                if await self._posted(update):
                    if queue and queue[0] is update:
                        queue.popleft()
                    if queue:
                        self.ready.append(key)
                    elif bot.held.get(key) is queue:
                        del bot.held[key]
                    return
                delay = min(5.0, max(0.05, delay * 2 or 0.05))
                await asyncio.sleep(delay)
        finally:
            self.busy.discard(key)
            self.changed.set()

    async def _posted(self, update: dict[str, Any]) -> bool:
        url = self.bot.webhook_url
        if not url:
            return False
        if self.poster is None or self.poster.url != url:
            if self.poster is not None:
                self.poster.close()
            self.poster = _Poster(url)
        status = await self.poster.post(json.dumps(update).encode(), self.bot.webhook_secret)
        return status is not None and 200 <= status < 300
