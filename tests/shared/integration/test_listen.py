"""The LISTEN connection is checked while quiet: one that went silently dead is replaced."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from shared.listen import Listener


class BlackholeProxy:
    """TCP between the listener and PostgreSQL; `blackhole()` makes the connections open so far
    swallow everything without closing, as a dead network path or a frozen peer would."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.dead = False
        self.connections = 0
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self.writers += [writer, up_writer]
        generation = self.dead

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await src.read(65536):
                    if self.dead and not generation:
                        continue  # swallowed: no answer, no close
                    dst.write(data)
                    await dst.drain()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def blackhole(self) -> None:
        """Existing connections go silent; new ones still work."""
        self.dead = True

    async def close(self) -> None:
        for writer in self.writers:
            writer.close()
        if self.server is not None:
            self.server.close()


def through(url: str, port: int) -> str:
    parts = urlsplit(url)
    netloc = f"{parts.username}:{parts.password}@127.0.0.1:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def test_listener__replaces_a_silently_dead_connection(database_url: str) -> None:
    async def scenario() -> int:
        parts = urlsplit(database_url)
        proxy = BlackholeProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
        port = await proxy.start()
        listener = Listener(
            through(database_url, port), ("wake",), check_every=0.3, check_timeout=0.5
        )
        listener.start()
        try:
            await asyncio.wait_for(listener.connected.wait(), 10)
            listener.event("wake").clear()
            proxy.blackhole()
            # Sent while the old connection is dead: only a new LISTEN can hear what follows.
            deadline = asyncio.get_running_loop().time() + 15
            event = listener.event("wake")
            while not event.is_set():
                assert asyncio.get_running_loop().time() < deadline, "never heard again"
                conn = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
                async with conn:
                    await conn.execute("SELECT pg_notify('wake', '')")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), 0.5)
            return proxy.connections
        finally:
            await listener.stop()
            await proxy.close()

    assert asyncio.run(scenario()) >= 2


def test_listener__hands_payloads_to_subscribers_and_says_when_it_reconnected(
    database_url: str,
) -> None:
    async def notify(payload: str) -> None:
        conn = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
        async with conn:
            await conn.execute("SELECT pg_notify('gate', %s)", (payload,))

    async def scenario() -> tuple[list[str], int]:
        heard: list[str] = []
        reconnects = 0
        got = asyncio.Event()

        def on_payload(payload: str) -> None:
            heard.append(payload)
            got.set()

        def on_reconnect() -> None:
            nonlocal reconnects
            reconnects += 1

        listener = Listener(database_url, ("gate",))
        listener.subscribe("gate", on_payload)
        listener.on_reconnect(on_reconnect)
        listener.start()
        try:
            await asyncio.wait_for(listener.connected.wait(), 10)
            for payload in ("-100:7", "-100:8"):
                got.clear()
                await notify(payload)
                await asyncio.wait_for(got.wait(), 10)
            listener.connected.clear()
            conn = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
            async with conn:
                await conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            await asyncio.wait_for(listener.connected.wait(), 20)
            got.clear()
            await notify("-100:9")
            await asyncio.wait_for(got.wait(), 10)
            return heard, reconnects
        finally:
            await listener.stop()

    heard, reconnects = asyncio.run(scenario())
    assert heard == ["-100:7", "-100:8", "-100:9"]
    # Once at the first connection, once after the connection was killed.
    assert reconnects == 2


def test_listener__subscribing_to_a_channel_not_listened_to_is_refused(database_url: str) -> None:
    listener = Listener(database_url, ("inbox",))
    with pytest.raises(ValueError, match="'gate' is not among the channels"):
        listener.subscribe("gate", print)
