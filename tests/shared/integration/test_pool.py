"""The services' pool after an outage: back soon after the database is, however long it was away."""

from __future__ import annotations

import asyncio
import contextlib
import time
from urllib.parse import urlsplit, urlunsplit

import psycopg
import psycopg_pool
import pytest

from shared.db import create_pool
from shared.settings import CommonSettings, Reader
from shared.testing import free_port

OUTAGE = 16.0


class Outage:
    """TCP in front of PostgreSQL on a port of its own. `down()` closes every connection and
    refuses new ones, as a stopped server does; `up()` listens on the same port again."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self.server: asyncio.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []
        self.serving: set[asyncio.Task[None]] = set()

    async def up(self) -> None:
        self.server = await asyncio.start_server(
            self._serve, "127.0.0.1", self.port, reuse_address=True
        )

    async def down(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:
            writer.close()
        await asyncio.gather(*self.serving, return_exceptions=True)
        for writer in self.writers:
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        self.writers.clear()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.serving.add(task)
        task.add_done_callback(self.serving.discard)
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        self.writers += [writer, upstream_writer]

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))


def through(url: str, port: int) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[0] + f"@127.0.0.1:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@pytest.mark.slow(18)
def test_pool__a_connection_again_within_seconds_of_a_16_s_outage_ending(
    database_url: str,
) -> None:
    """Reconnection attempts back off 1, 2, 4, 8, 16 s apart: left alone, the attempt after a
    16 s outage would come 15 s after the database was back, and every request wait for it."""
    target = urlsplit(database_url)

    async def scenario() -> float:
        outage = Outage((target.hostname or "127.0.0.1", target.port or 5432))
        await outage.up()
        env = {"DATABASE_URL": through(database_url, outage.port), "DB_POOL_MAX": "1"}
        pool = create_pool(CommonSettings.read(Reader(env), "test", 1))
        await pool.open(wait=True)
        try:
            await outage.down()
            began = time.monotonic()
            # A request meets the outage: the pool starts trying to reconnect.
            with pytest.raises((psycopg.OperationalError, psycopg_pool.PoolTimeout)):
                async with pool.connection(timeout=1) as conn:
                    await conn.execute("SELECT 1")
            await asyncio.sleep(OUTAGE - (time.monotonic() - began))  # the outage's length
            await outage.up()
            back = time.monotonic()
            async with pool.connection(timeout=30) as conn:
                await conn.execute("SELECT 1")
            return time.monotonic() - back
        finally:
            await pool.close()
            await outage.down()

    took = asyncio.run(scenario())
    print(f"a connection {took:.2f} s after the database was back")
    assert took < 5
