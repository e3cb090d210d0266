"""The team (owner only): list, add, change; the audit log; workspace settings."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import Annotated, Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import errors, store
from panel_api.access import (
    CREATED,
    ID,
    Caller,
    Column,
    Listing,
    Me,
    Paged,
    Role,
    Word,
    answer,
    converted,
    mapped,
    query,
)
from panel_api.auth import Email
from panel_api.passwords import MIN_PASSWORD, Passwords, refuse_if_too_long
from shared.clock import Clock
from shared.db import Connection
from shared.errors import json_body
from shared.logging import request_id
from shared.web import runtime

# The roles the owner hands out; there is one owner.
GrantedRole = Literal["admin", "editor", "viewer"]
DisplayName = Annotated[str, msgspec.Meta(max_length=120, pattern=r"^[^\x00-\x1f\x7f]*$")]


class NewMember(msgspec.Struct, forbid_unknown_fields=True):
    email: Email
    role: GrantedRole
    password: Annotated[str, msgspec.Meta(min_length=MIN_PASSWORD, max_length=1024)]
    display_name: DisplayName = ""


class MemberChange(msgspec.Struct, forbid_unknown_fields=True):
    role: GrantedRole | msgspec.UnsetType = msgspec.UNSET
    display_name: DisplayName | msgspec.UnsetType = msgspec.UNSET
    disabled: bool | msgspec.UnsetType = msgspec.UNSET


class TeamMember(msgspec.Struct):
    id: int
    email: str
    display_name: str
    role: Role
    disabled: bool
    created_at: dt.datetime


TeamSort = Literal["id", "-id", "email", "-email", "role", "-role", "created_at", "-created_at"]
TEAM = Listing(
    "team_list",
    key=(ID,),
    sorts=(ID, Column("email", str), Column("role", str), CREATED),
    sort_type=TeamSort,
)


class TeamQuery(Paged, kw_only=True):
    sort: TeamSort = "id"


class AuditEntry(msgspec.Struct):
    id: int
    member_id: int | None
    # Who made the change; null for a write with no member behind it (the first owner's setup).
    member_email: str | None
    action: str
    target: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    at: dt.datetime
    request_id: str | None


AuditSort = Literal["id", "-id", "at", "-at", "action", "-action"]
AUDIT = Listing(
    "audit_list",
    key=(ID,),
    sorts=(ID, Column("at", dt.datetime), Column("action", str)),
    sort_type=AuditSort,
)


class AuditQuery(Paged, kw_only=True):
    sort: AuditSort = "-id"
    member: Annotated[int, msgspec.Meta(ge=1, le=2**63 - 1)] | None = None
    action: Word | None = None
    # What the action is done to: the part of its name before the dot (`channels`).
    kind: Word | None = None
    target: Word | None = None
    since: Annotated[dt.datetime, msgspec.Meta(tz=True)] | None = None
    until: Annotated[dt.datetime, msgspec.Meta(tz=True)] | None = None


class Workspace(msgspec.Struct):
    name: str
    time_zone: str
    language: Literal["en", "fa"]
    # Where advertisers pay (base58check); null until the owner sets it.
    tron_address: str | None = None
    # Where a transaction hash is looked up: {hash} is replaced by it.
    tx_explorer: str = "https://tronscan.org/#/transaction/{hash}"


# Base58check: T and 33 of the bitcoin alphabet; the checksum is checked on write.
TronAddress = Annotated[str, msgspec.Meta(pattern=r"^T[1-9A-HJ-NP-Za-km-z]{33}$")]

Explorer = Annotated[
    str, msgspec.Meta(max_length=300, pattern=r"^https://[^\s{}]+(\{hash\}[^\s{}]*)$")
]


class WorkspaceChange(msgspec.Struct, forbid_unknown_fields=True):
    time_zone: Annotated[str, msgspec.Meta(max_length=64)] | msgspec.UnsetType = msgspec.UNSET
    language: Literal["en", "fa"] | msgspec.UnsetType = msgspec.UNSET
    tron_address: TronAddress | msgspec.UnsetType | None = msgspec.UNSET
    tx_explorer: Explorer | msgspec.UnsetType = msgspec.UNSET


class Team:
    def __init__(self, clock: Clock, passwords: Passwords) -> None:
        self.clock = clock
        self.passwords = passwords

    async def me(self, request: Request, caller: Caller) -> Response:
        return answer(Me(caller.id, caller.email, caller.role))

    async def list_members(self, request: Request, caller: Caller) -> Response:
        where = query(request, TeamQuery)
        found = await TEAM.page(request, where, {})
        return answer(mapped(found, lambda row: _member(store.TeamMember.from_row(row))))

    async def add(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewMember, limit=4096)
        refuse_if_too_long(body.password, "password")
        password_hash = await self.passwords.hash_off_loop(body.password)
        now = self.clock.now()
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            member = await store.insert_member(
                conn, body.email.strip().lower(), body.display_name, password_hash, body.role
            )
            if member is None:
                raise errors.Conflict("a member with that email exists")
            await _audit(conn, caller, "team.add", member, None, member.as_json(), now)
        return answer(_member(member), status=201)

    async def change(self, request: Request, caller: Caller) -> Response:
        member_id = int(request.path_params["member_id"])
        body = await json_body(request, MemberChange, limit=4096)
        now = self.clock.now()
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            before = await store.member_for_update(conn, member_id) if member_id < 2**63 else None
            if before is None:
                raise errors.NotFound("no team member by that id")
            role = before.role if isinstance(body.role, msgspec.UnsetType) else body.role
            disabled = (
                before.disabled if isinstance(body.disabled, msgspec.UnsetType) else body.disabled
            )
            name = (
                before.display_name
                if isinstance(body.display_name, msgspec.UnsetType)
                else body.display_name
            )
            if before.role == Role.OWNER and (role != Role.OWNER or disabled):
                raise errors.Conflict("the owner cannot be demoted or disabled")
            after = await store.update_member(
                conn, member_id, role, name, now if disabled else None
            )
            if disabled and not before.disabled:
                await store.revoke_member_sessions(conn, member_id, now)
            await _audit(conn, caller, "team.update", after, before.as_json(), after.as_json(), now)
        return answer(_member(after))

    async def audit_log(self, request: Request, caller: Caller) -> Response:
        where = query(request, AuditQuery)
        filters: dict[str, Any] = {
            "member_id": where.member,
            "action": where.action,
            "kind": where.kind,
            "target": where.target,
            "since": where.since,
            "until": where.until,
        }
        found = await AUDIT.page(request, where, filters)
        return answer(converted(found, AuditEntry))

    async def workspace(self, request: Request, caller: Caller) -> Response:
        async with store.connection(runtime(request).pool) as conn:
            row = await store.workspace(conn)
        if row is None:
            raise errors.NotFound("the workspace is not set up yet")
        return answer(msgspec.convert(row, Workspace))

    async def change_workspace(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, WorkspaceChange, limit=4096)
        if not isinstance(body.time_zone, msgspec.UnsetType):
            _check_time_zone(body.time_zone)
        if isinstance(body.tron_address, str):
            _check_tron_address(body.tron_address)
        now = self.clock.now()
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            before = await store.workspace(conn, for_update=True)
            if before is None:
                raise errors.NotFound("the workspace is not set up yet")
            after = await store.update_workspace(
                conn,
                {
                    name: before[name] if isinstance(value, msgspec.UnsetType) else value
                    for name, value in msgspec.structs.asdict(body).items()
                },
            )
            await store.audit(
                conn,
                member_id=caller.id,
                action="workspace.update",
                target="workspace",
                before=before,
                after=after,
                now=now,
                request_id=request_id.get(),
            )
        return answer(msgspec.convert(after, Workspace))


def _member(member: store.TeamMember) -> TeamMember:
    return TeamMember(
        member.id,
        member.email,
        member.display_name,
        Role(member.role),
        member.disabled,
        member.created_at,
    )


async def _audit(
    conn: Connection,
    caller: Caller,
    action: str,
    member: store.TeamMember,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    now: dt.datetime,
) -> None:
    await store.audit(
        conn,
        member_id=caller.id,
        action=action,
        target=f"team_member:{member.id}",
        before=before,
        after=after,
        now=now,
        request_id=request_id.get(),
    )


def _check_tron_address(address: str) -> None:
    from tronpy.keys import is_base58check_address

    try:
        valid = bool(is_base58check_address(address))
    except ValueError:
        valid = False
    if not valid:
        raise errors.InvalidValue(
            f"{address!r} is not a TRON address (checksum)", field="tron_address", code="bad-format"
        )


def _check_time_zone(name: str) -> None:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise errors.InvalidValue(
            f"{name!r} is not an IANA time zone", field="time_zone", code="not-one-of"
        ) from None
