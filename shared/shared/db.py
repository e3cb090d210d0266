"""The pool every service uses: UTC sessions, a statement timeout, idle connections checked.

Connections are in autocommit: a statement outside `conn.transaction()` commits on its own, and
`conn.transaction()` is a real BEGIN ... COMMIT. Without autocommit the first statement would
open an implicit transaction that lasts until the connection goes back to the pool, every later
`conn.transaction()` would be only a savepoint inside it, and its locks would be held that long.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeAlias

import psycopg
import psycopg_pool
from psycopg import AsyncConnection, pq
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from shared.settings import CommonSettings

Connection: TypeAlias = AsyncConnection[DictRow]
Pool: TypeAlias = AsyncConnectionPool[Connection]


def session_options(statement_timeout_ms: int) -> str:
    return f"-c TimeZone=UTC -c statement_timeout={int(statement_timeout_ms)}"


# How long one attempt to add a connection keeps trying (1, 2, 4 s apart, then the rest).
RECONNECT_WITHIN = 8.0


def create_pool(settings: CommonSettings, *, name: str | None = None) -> Pool:
    """A pool that is not open yet: the lifespan opens it without waiting for the database.

    Opening without waiting lets a process start (and answer /readyz with 503) while PostgreSQL
    is down; `_check_idle` drops connections that died while idle, so the pool heals when it
    returns.

    A connection attempt that keeps failing waits twice as long each time with no upper bound
    (1, 2, 4 ... s): after a 30 s outage the next one came 30 s after the database was back.
    Giving each up after RECONNECT_WITHIN bounds that: the next request that wants a connection
    starts a new one, from 1 s again.
    """
    kwargs: dict[str, Any] = {
        "options": session_options(settings.statement_timeout_ms),
        "application_name": settings.service_name,
        "row_factory": dict_row,
        "connect_timeout": 5,
        "autocommit": True,
    }
    return AsyncConnectionPool(
        settings.database_url.reveal(),
        connection_class=Connection,
        min_size=settings.db_pool_min,
        max_size=settings.db_pool_max,
        name=name or settings.service_name,
        open=False,
        check=_check_idle,
        reset=_returned,
        kwargs=kwargs,
        reconnect_timeout=RECONNECT_WITHIN,
    )


# When each pooled connection last went back to the pool.
_RETURNED_AT: weakref.WeakKeyDictionary[Connection, float] = weakref.WeakKeyDictionary()
# A connection back in use sooner than this is trusted without a round trip: under load the
# check would cost a round trip per checkout, and a query on a dead one fails anyway.
CHECK_AFTER_IDLE = 1.0


async def _returned(conn: Connection) -> None:
    _RETURNED_AT[conn] = time.monotonic()


async def _check_idle(conn: Connection) -> None:
    if conn.broken or conn.closed:
        raise psycopg.OperationalError("the connection is closed")
    if time.monotonic() - _RETURNED_AT.get(conn, 0.0) > CHECK_AFTER_IDLE:
        await AsyncConnectionPool.check_connection(conn)


async def connect(database_url: str, *, autocommit: bool = False) -> Connection:
    """A single connection outside the pool (LISTEN, tools)."""
    return await AsyncConnection.connect(
        database_url,
        autocommit=autocommit,
        options=session_options(60_000),
        connect_timeout=5,
        row_factory=dict_row,
    )


@asynccontextmanager
async def pipelined_transaction(conn: Connection) -> AsyncIterator[None]:
    """BEGIN, the block's statements and COMMIT in one pipeline, answered at one sync (a
    statement whose rows the block reads is answered then, mid-way). psycopg's
    `transaction()` inside `pipeline()` syncs at its own end and the pipeline again at its
    end: for three statements, 545-716 us of the client's CPU and 183-210 us of PostgreSQL's
    against 366-408 and 123-150 us this way. A failed statement fails every later one, COMMIT
    included; its error comes out of the block and the transaction is rolled back."""
    try:
        async with conn.pipeline():
            await conn.execute("BEGIN")
            yield
            await conn.execute("COMMIT")
    except BaseException:
        if conn.info.transaction_status in (
            pq.TransactionStatus.INTRANS,
            pq.TransactionStatus.INERROR,
        ):
            await conn.rollback()
        raise


@asynccontextmanager
async def translated(
    pool: Pool,
    *,
    unavailable: Callable[[str], Exception],
    failed: Callable[[str], Exception],
    timeout: float | None = None,
) -> AsyncIterator[Connection]:
    """A pool connection whose psycopg errors, on checkout or in the block, come out as the
    service's own: `unavailable` for the database being away (worth a retry), `failed` for a
    statement that failed otherwise. Other exceptions pass through untouched."""
    try:
        async with pool.connection(timeout) as conn:
            yield conn
    except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as error:
        raise unavailable(str(error) or type(error).__name__) from error
    except psycopg.Error as error:
        raise failed(f"{type(error).__name__}: {error}") from error
