"""The bot edge's way to the database: a pool connection whose psycopg errors come out as the
bot edge's own, where the SQL runs (as procrastinate's `wrap_exceptions` does)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from botedge import errors
from shared.db import Connection, Pool, translated


def connection(pool: Pool, timeout: float | None = None) -> AbstractAsyncContextManager[Connection]:
    """`errors.DatabaseUnavailable` when the database is away, `errors.StoreError` when a
    statement failed otherwise."""
    return translated(
        pool,
        unavailable=errors.DatabaseUnavailable,
        failed=errors.StoreError,
        timeout=timeout,
    )
