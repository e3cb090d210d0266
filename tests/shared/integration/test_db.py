from __future__ import annotations

import asyncio

import psycopg
import pytest
from psycopg import pq

from shared.db import connect, create_pool, pipelined_transaction
from shared.settings import CommonSettings, Reader


def test_pool__sessions_in_utc_with_a_statement_timeout(database_url: str) -> None:
    env = {"DATABASE_URL": database_url, "DB_STATEMENT_TIMEOUT_MS": "250"}
    settings = CommonSettings.read(Reader(env), "pool-test", 1)

    async def check() -> None:
        pool = create_pool(settings)
        await pool.open(wait=True, timeout=10)
        try:
            async with pool.connection() as conn:
                cur = await conn.execute("SELECT current_setting('TimeZone') AS tz")
                assert await cur.fetchone() == {"tz": "UTC"}
                cur = await conn.execute("SELECT current_setting('application_name') AS app")
                assert await cur.fetchone() == {"app": "pool-test"}
                with pytest.raises(psycopg.errors.QueryCanceled):
                    await conn.execute("SELECT pg_sleep(2)")
        finally:
            await pool.close()

    asyncio.run(check())


def test_pipelined_transaction__all_or_nothing_and_the_connection_left_idle(
    database_url: str,
) -> None:
    """Committed whole; a failed statement or an exception in the block rolls back what came
    before it, the error comes out, and the connection is ready for the next one."""

    async def check() -> None:
        conn = await connect(database_url, autocommit=True)
        try:
            await conn.execute("CREATE TEMP TABLE t (k int PRIMARY KEY)")

            async def rows() -> list[int]:
                cur = await conn.execute("SELECT k FROM t ORDER BY k")
                return [row["k"] for row in await cur.fetchall()]

            async with pipelined_transaction(conn):
                await conn.execute("INSERT INTO t VALUES (1)")
                cur = await conn.execute("INSERT INTO t VALUES (2) RETURNING k")
                # Rows read mid-way are answered then, inside the transaction.
                assert await cur.fetchone() == {"k": 2}
            assert await rows() == [1, 2]

            with pytest.raises(psycopg.errors.UniqueViolation):
                async with pipelined_transaction(conn):
                    await conn.execute("INSERT INTO t VALUES (3)")
                    await conn.execute("INSERT INTO t VALUES (1)")
                    await conn.execute("INSERT INTO t VALUES (4)")
            assert conn.info.transaction_status is pq.TransactionStatus.IDLE
            assert await rows() == [1, 2]

            with pytest.raises(LookupError):
                async with pipelined_transaction(conn):
                    await conn.execute("INSERT INTO t VALUES (5)")
                    raise LookupError("the caller changed its mind")
            assert conn.info.transaction_status is pq.TransactionStatus.IDLE
            assert await rows() == [1, 2]
        finally:
            await conn.close()

    asyncio.run(check())
