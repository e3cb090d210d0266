"""The panel API's database work: every statement runs here, from `queries.sql`, on a
connection from `connection(pool)`."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from panel_api import errors, sqlq
from shared.db import Connection, Pool, translated

Q = sqlq.Q


def connection(pool: Pool) -> AbstractAsyncContextManager[Connection]:
    """psycopg's errors come out as `DatabaseUnavailable` or `StoreError`."""
    return translated(pool, unavailable=errors.DatabaseUnavailable, failed=errors.StoreError)


@dataclass(frozen=True)
class MemberRow:
    id: int
    email: str
    role: str
    password_hash: str | None
    disabled: bool

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> MemberRow:
        return cls(
            id=int(row["id"]),
            email=str(row["email"]),
            role=str(row["role"]),
            password_hash=row.get("password_hash"),
            disabled=row["disabled_at"] is not None,
        )


async def member_by_email(conn: Connection, email: str) -> MemberRow | None:
    cur = await conn.execute(Q["member_by_email"], {"email": email})
    row = await cur.fetchone()
    return MemberRow.from_row(row) if row else None


async def member_by_id(conn: Connection, member_id: int) -> MemberRow | None:
    cur = await conn.execute(Q["member_by_id"], {"id": member_id})
    row = await cur.fetchone()
    return MemberRow.from_row(row) if row else None
