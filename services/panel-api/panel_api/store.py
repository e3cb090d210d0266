"""The panel API's database work: every statement runs here, from `queries.sql`, on a
connection from `connection(pool)`."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from panel_api import errors, sqlq
from shared.db import Connection, Pool, translated

Q = sqlq.Q


def connection(pool: Pool) -> AbstractAsyncContextManager[Connection]:
    """psycopg's errors come out as `DatabaseUnavailable` or `StoreError`."""
    return translated(pool, unavailable=errors.DatabaseUnavailable, failed=errors.StoreError)


@asynccontextmanager
async def _checked(what: str) -> AsyncIterator[None]:
    """A value the table's CHECK refuses is the caller's mistake, not a failed statement."""
    try:
        yield
    except psycopg.errors.CheckViolation:
        raise errors.InvalidValue(
            f"{what} is not one the database accepts", field=what, code="bad-format"
        ) from None


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


async def installation_name(conn: Connection) -> str:
    row = await (await conn.execute(Q["installation_name"])).fetchone()
    if row is None:
        raise errors.StoreError("the installation has no name: migrations have not run")
    return str(row["name"])


@dataclass(frozen=True)
class Limits:
    """How many failures within the window each count allows before 429."""

    address: int
    """A stranger's, from one address, whatever account it names."""
    pair: int
    """A stranger's, naming one account from one address."""
    account: int
    """Strangers', naming one account from anywhere."""
    device: int
    """One device cookie's, on the account it was given for."""


@dataclass(frozen=True)
class Attempt:
    """Who tries a secret: the key it names (an account's email), the address it comes from,
    and the known browser (device cookie) it comes with, if any."""

    key: str
    address: str
    device: str | None = None


async def throttled_until(
    conn: Connection, attempt: Attempt, now: dt.datetime, window: dt.timedelta, limits: Limits
) -> dt.datetime | None:
    """When the caller may try again, if a count it is judged by has its limit of failures
    within `window` of `now`; else None."""
    cur = await conn.execute(
        Q["failures_blocking"],
        {
            "email": attempt.key,
            "address": attempt.address,
            "device": attempt.device,
            "since": now - window,
            "address_offset": limits.address - 1,
            "pair_offset": limits.pair - 1,
            "account_offset": limits.account - 1,
            "device_offset": limits.device - 1,
        },
    )
    blocking = [row["at"] + window for row in await cur.fetchall()]
    return max(blocking) if blocking else None


async def record_failure(
    conn: Connection, attempt: Attempt, now: dt.datetime, window: dt.timedelta
) -> None:
    params = {"email": attempt.key, "address": attempt.address, "device": attempt.device}
    async with conn.transaction():
        await conn.execute(Q["forget_old_failures"], {"since": now - window})
        await conn.execute(Q["record_failure"], {**params, "now": now})


async def forget_failures(conn: Connection, attempt: Attempt) -> None:
    params = {"email": attempt.key, "address": attempt.address, "device": attempt.device}
    await conn.execute(Q["forget_account_failures"], params)


# -- refresh tokens -----------------------------------------------------------------------


@dataclass(frozen=True)
class RefreshRow:
    id: int
    family: uuid.UUID
    member: MemberRow
    expires_at: dt.datetime
    rotated_at: dt.datetime | None
    successor_sealed: str | None
    revoked: bool


async def insert_refresh_token(
    conn: Connection,
    family: uuid.UUID,
    member_id: int,
    token_hash: bytes,
    now: dt.datetime,
    expires_at: dt.datetime,
) -> int:
    cur = await conn.execute(
        Q["insert_refresh_token"],
        {
            "family": family,
            "member_id": member_id,
            "token_hash": token_hash,
            "now": now,
            "expires_at": expires_at,
        },
    )
    row = await cur.fetchone()
    if row is None:
        raise errors.StoreError("insert_refresh_token returned no row")
    return int(row["id"])


async def refresh_token_for_update(conn: Connection, token_hash: bytes) -> RefreshRow | None:
    cur = await conn.execute(Q["refresh_token_for_update"], {"token_hash": token_hash})
    row = await cur.fetchone()
    if row is None:
        return None
    member = MemberRow(
        id=int(row["member_id"]),
        email=str(row["email"]),
        role=str(row["role"]),
        password_hash=None,
        disabled=row["disabled_at"] is not None,
    )
    return RefreshRow(
        id=int(row["id"]),
        family=row["family"],
        member=member,
        expires_at=row["expires_at"],
        rotated_at=row["rotated_at"],
        successor_sealed=row["successor_sealed"],
        revoked=row["revoked_at"] is not None,
    )


async def mark_rotated(
    conn: Connection, token_id: int, successor_id: int, sealed: str, now: dt.datetime
) -> None:
    await conn.execute(
        Q["mark_rotated"],
        {"id": token_id, "successor_id": successor_id, "sealed": sealed, "now": now},
    )


async def revoke_family(conn: Connection, family: uuid.UUID, now: dt.datetime) -> None:
    await conn.execute(Q["revoke_family"], {"family": family, "now": now})


async def forget_sealed_pairs(conn: Connection, before: dt.datetime) -> None:
    await conn.execute(Q["forget_sealed_pairs"], {"before": before})


# -- first-run setup ----------------------------------------------------------------------


@dataclass(frozen=True)
class SetupCode:
    code_hash: bytes
    expires_at: dt.datetime


async def owner_exists(conn: Connection) -> bool:
    cur = await conn.execute(Q["owner_exists"])
    return await cur.fetchone() is not None


async def save_setup_code(conn: Connection, code_hash: bytes, expires_at: dt.datetime) -> None:
    await conn.execute(Q["save_setup_code"], {"code_hash": code_hash, "expires_at": expires_at})


async def setup_code(conn: Connection) -> SetupCode | None:
    cur = await conn.execute(Q["setup_code"])
    row = await cur.fetchone()
    return SetupCode(bytes(row["code_hash"]), row["expires_at"]) if row else None


async def create_owner(
    conn: Connection, email: str, password_hash: str, code_hash: bytes
) -> MemberRow | None:
    """In the caller's transaction: the owner, if the code is still there to take and no owner
    exists yet (checked under the seed lock); else None."""
    await conn.execute(Q["lock_seed"])
    if await owner_exists(conn):
        return None
    taken = await (await conn.execute(Q["take_setup_code"], {"code_hash": code_hash})).fetchone()
    if taken is None:
        return None
    await conn.execute(Q["insert_workspace"], {"name": "Workspace"})
    async with _checked("email"):
        cur = await conn.execute(
            Q["insert_setup_owner"], {"email": email, "password_hash": password_hash}
        )
    row = await cur.fetchone()
    return MemberRow.from_row(row) if row else None


# -- the team and the audit log -----------------------------------------------------------


@dataclass(frozen=True)
class TeamMember:
    id: int
    email: str
    display_name: str
    role: str
    disabled: bool
    created_at: dt.datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> TeamMember:
        return cls(
            id=int(row["id"]),
            email=str(row["email"]),
            display_name=str(row["display_name"]),
            role=str(row["role"]),
            disabled=row["disabled_at"] is not None,
            created_at=row["created_at"],
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "email": self.email,
            "display_name": self.display_name,
            "role": self.role,
            "disabled": self.disabled,
            "created_at": self.created_at.isoformat(),
        }


async def member_for_update(conn: Connection, member_id: int) -> TeamMember | None:
    cur = await conn.execute(Q["member_for_update"], {"id": member_id})
    row = await cur.fetchone()
    return TeamMember.from_row(row) if row else None


async def insert_member(
    conn: Connection, email: str, display_name: str, password_hash: str, role: str
) -> TeamMember | None:
    """None when the email is taken."""
    async with _checked("email"):
        cur = await conn.execute(
            Q["insert_member"],
            {
                "email": email,
                "display_name": display_name,
                "password_hash": password_hash,
                "role": role,
            },
        )
    row = await cur.fetchone()
    return TeamMember.from_row(row) if row else None


async def update_member(
    conn: Connection,
    member_id: int,
    role: str,
    display_name: str,
    disabled_at: dt.datetime | None,
) -> TeamMember:
    cur = await conn.execute(
        Q["update_member"],
        {"id": member_id, "role": role, "display_name": display_name, "disabled_at": disabled_at},
    )
    row = await cur.fetchone()
    if row is None:
        raise errors.StoreError("update_member returned no row")
    return TeamMember.from_row(row)


async def set_password(conn: Connection, member_id: int, password_hash: str) -> None:
    await conn.execute(Q["set_password"], {"id": member_id, "password_hash": password_hash})


async def revoke_member_sessions(conn: Connection, member_id: int, now: dt.datetime) -> None:
    await conn.execute(Q["revoke_member_sessions"], {"id": member_id, "now": now})


async def audit(
    conn: Connection,
    *,
    member_id: int,
    action: str,
    target: str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    now: dt.datetime,
    request_id: str | None,
) -> None:
    """Call inside the write's own transaction: the entry and the change commit together."""
    await conn.execute(
        Q["insert_audit"],
        {
            "member_id": member_id,
            "action": action,
            "target": target,
            "before": Jsonb(before) if before is not None else None,
            "after": Jsonb(after) if after is not None else None,
            "now": now,
            "request_id": request_id,
        },
    )


async def workspace(conn: Connection, *, for_update: bool = False) -> dict[str, Any] | None:
    cur = await conn.execute(Q["workspace_for_update" if for_update else "workspace"])
    row = await cur.fetchone()
    return dict(row) if row else None


async def update_workspace(conn: Connection, settings: dict[str, Any]) -> dict[str, Any]:
    """`settings`: every column `workspace` returns but the name."""
    cur = await conn.execute(Q["update_workspace"], settings)
    row = await cur.fetchone()
    if row is None:
        raise errors.StoreError("update_workspace returned no row")
    return dict(row)


# -- what billing and botedge keep, read for the owner --------------------------------------


async def row(conn: Connection, query: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The first row the named query finds, or None."""
    cur = await conn.execute(Q[query], params)
    found = await cur.fetchone()
    return dict(found) if found is not None else None


async def rows(conn: Connection, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of one of the read-only queries."""
    cur = await conn.execute(Q[query], params)
    return [dict(row) for row in await cur.fetchall()]
