"""Webhook delivery as Telegram does it: a queue per chat (per user for callbacks), each posted
in order with one update in flight, up to the bot's `max_connections` queues at once; a
non-2xx answer is retried with backoff and holds up only its own queue."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from typing import Any

import aiohttp

from shared.lifecycle import wait_any
from simulators.telegram.state import Bot, World, queue_key

QueueKey = tuple[str, int]


class Deliveries:
    """One delivery task per bot with a webhook, started when it has something to post."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.clients: list[aiohttp.ClientSession] = []

    def start(self, bot: Bot) -> None:
        if bot.webhook_url and (bot.delivering is None or bot.delivering.done()):
            bot.delivering = asyncio.get_running_loop().create_task(self._deliver(bot))

    async def close(self) -> None:
        self.world.closing.set()
        running = [bot.delivering for bot in self.world.bots.values() if bot.delivering]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        for client in self.clients:
            await client.close()

    async def _deliver(self, bot: Bot) -> None:
        # A session per bot, on aiohttp like the worker's calls: a tenth of httpx's CPU per
        # request on this machine.
        client = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(total=60),
        )
        self.clients.append(client)
        queues = _Queues(self.world, bot, client)
        try:
            while bot.webhook_url and not self.world.closing.is_set():
                queues.take_new()
                queues.post_ready()
                await queues.wait()
        finally:
            await queues.stop()
            self.clients.remove(client)
            await client.close()
            if not bot.webhook_url:
                bot.release_held()


class _Queues:
    """One bot's per-chat queues and the posts in flight."""

    def __init__(self, world: World, bot: Bot, client: aiohttp.ClientSession) -> None:
        self.world = world
        self.bot = bot
        self.client = client
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
        headers = {"content-type": "application/json"}
        if self.bot.webhook_secret:
            headers["X-Telegram-Bot-Api-Secret-Token"] = self.bot.webhook_secret
        try:
            async with self.client.post(
                self.bot.webhook_url, data=json.dumps(update).encode(), headers=headers
            ) as response:
                await response.read()
                return 200 <= response.status < 300
        except (aiohttp.ClientError, TimeoutError):
            return False
