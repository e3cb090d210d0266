from __future__ import annotations

import asyncio

import psycopg
import pytest

from shared.db import create_pool
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
