"""Who may be in a paid channel besides its payers: the whitelist, grants until a date, and
the import that adds members from before Gatehouse (the Bot API cannot list a channel's
members, so the owner uploads their Telegram ids).

Grants are billing's (`POST /internal/grants`): money and memberships are its. Each is
idempotent there (a grant that would not move `expires_at` writes nothing), so an import
cut short by billing going away is simply sent again.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import errors, store
from panel_api.access import (
    CREATED,
    Caller,
    Column,
    Listing,
    Paged,
    answer,
    audit,
    converted,
    path_id,
    query,
)
from panel_api.fields import Id
from panel_api.internal import Internal, each, relayed
from panel_api.sqlq import Q
from shared.clock import Clock
from shared.errors import json_body
from shared.web import runtime

MAX_IMPORT = 10_000
TelegramId = Annotated[int, msgspec.Meta(gt=0, le=2**63 - 1)]
Note = Annotated[str, msgspec.Meta(max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$")]
Reason = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]
Until = Annotated[dt.datetime, msgspec.Meta(tz=True)]


USER = Column("telegram_user_id", int)
WhitelistSort = Literal["telegram_user_id", "-telegram_user_id", "created_at", "-created_at"]
WHITELIST = Listing("whitelist_list", key=(USER,), sorts=(USER, CREATED), sort_type=WhitelistSort)


class WhitelistQuery(Paged, kw_only=True):
    sort: WhitelistSort = "telegram_user_id"


class WhitelistEntry(msgspec.Struct):
    channel_id: int
    telegram_user_id: int
    note: str
    created_at: dt.datetime


class NewWhitelistEntry(msgspec.Struct, forbid_unknown_fields=True):
    telegram_user_id: TelegramId
    note: Note = ""


class ImportBody(msgspec.Struct, forbid_unknown_fields=True):
    """Telegram user ids as numbers or digit strings (a CSV column), each checked alone."""

    ids: Annotated[list[int | str], msgspec.Meta(min_length=1, max_length=MAX_IMPORT)]
    action: Literal["whitelist", "grant"]
    until: Until | None = None
    reason: Reason = "imported"
    note: Note = ""


class Rejected(msgspec.Struct):
    index: int
    value: str
    reason: str


class Imported(msgspec.Struct):
    accepted: int
    """Valid ids (each once)."""
    added: int
    """Whitelisted or granted by this import; the rest already were."""
    rejected: list[Rejected]


class NewGrant(msgspec.Struct, forbid_unknown_fields=True):
    telegram_user_id: TelegramId
    channel_id: Id
    until: Until
    reason: Reason


class GrantAnswer(msgspec.Struct):
    """billing's answer to a grant, relayed."""

    applied: bool
    membership: dict[str, str]


def checked_ids(values: list[int | str]) -> tuple[dict[int, int], list[Rejected]]:
    """The valid ids, each once, with their place in the list; every other value with why."""
    seen: set[int] = set()
    good: dict[int, int] = {}
    bad: list[Rejected] = []
    for index, value in enumerate(values):
        text = str(value).strip() if isinstance(value, str) else str(value)
        if isinstance(value, str) and not (text.isascii() and text.isdigit()):
            bad.append(Rejected(index, str(value)[:40], "not a whole number"))
            continue
        number = int(text)
        if not 0 < number <= 2**63 - 1:
            bad.append(Rejected(index, text[:40], "not a Telegram user id"))
        elif number in seen:
            bad.append(Rejected(index, text[:40], "listed twice"))
        else:
            seen.add(number)
            good[number] = index
    return good, bad


class Admission:
    def __init__(self, clock: Clock, billing: Internal) -> None:
        self.clock = clock
        self.billing = billing

    async def _paid_channel(self, conn: Any, channel_id: int) -> None:
        cur = await conn.execute(Q["channel_for_update"], {"id": channel_id})
        row = await cur.fetchone()
        if row is None:
            raise errors.NotFound("no channel by that id")
        if not row["is_paid"]:
            raise errors.InvalidValue(
                "the channel is not paid", field="channel_id", code="not-one-of"
            )

    async def whitelist(self, request: Request, caller: Caller) -> Response:
        channel_id = path_id(request, "channel_id", "channel")
        where = query(request, WhitelistQuery)
        found = await WHITELIST.page(request, where, {"channel_id": channel_id})
        return answer(converted(found, WhitelistEntry))

    async def add_to_whitelist(self, request: Request, caller: Caller) -> Response:
        channel_id = path_id(request, "channel_id", "channel")
        body = await json_body(request, NewWhitelistEntry, limit=4096)
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            await self._paid_channel(conn, channel_id)
            cur = await conn.execute(
                Q["whitelist_add"],
                {"channel_id": channel_id, **msgspec.to_builtins(body), "now": self.clock.now()},
            )
            entry = msgspec.convert(dict(await cur.fetchone() or {}), WhitelistEntry)
            await audit(
                conn,
                caller,
                self.clock,
                "whitelist.add",
                f"channel:{channel_id}:user:{body.telegram_user_id}",
                None,
                entry,
            )
        return answer(entry, status=201)

    async def remove_from_whitelist(self, request: Request, caller: Caller) -> Response:
        channel_id = path_id(request, "channel_id", "channel")
        user = int(request.path_params["telegram_user_id"])
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            cur = await conn.execute(
                Q["whitelist_remove"], {"channel_id": channel_id, "telegram_user_id": user}
            )
            gone = await cur.fetchone()
            if gone is None:
                raise errors.NotFound("not on that channel's whitelist")
            await audit(
                conn,
                caller,
                self.clock,
                "whitelist.remove",
                f"channel:{channel_id}:user:{user}",
                msgspec.convert(dict(gone), WhitelistEntry),
                None,
            )
        return Response(status_code=204)

    async def import_members(self, request: Request, caller: Caller) -> Response:
        channel_id = path_id(request, "channel_id", "channel")
        body = await json_body(request, ImportBody, limit=512 * 1024)
        if body.action == "grant" and body.until is None:
            raise errors.InvalidValue("a grant needs `until`", field="until", code="required")
        if body.until is not None and body.until <= self.clock.now():
            raise errors.InvalidValue(
                "until must be in the future", field="until", code="out-of-range"
            )
        ids, rejected = checked_ids(body.ids)
        async with store.connection(runtime(request).pool) as conn:
            async with conn.transaction():
                await self._paid_channel(conn, channel_id)
            if body.action == "whitelist":
                async with conn.transaction():
                    cur = await conn.execute(
                        Q["whitelist_import"],
                        {
                            "channel_id": channel_id,
                            "ids": list(ids),
                            "note": body.note,
                            "now": self.clock.now(),
                        },
                    )
                    added = len(await cur.fetchall())
            else:
                added, refused = await self._grant_all(channel_id, ids, body)
                rejected += refused
            result = Imported(len(ids), added, sorted(rejected, key=lambda r: r.index))
            async with conn.transaction():
                await audit(
                    conn,
                    caller,
                    self.clock,
                    f"channels.import_{body.action}",
                    f"channel:{channel_id}",
                    None,
                    {
                        "accepted": result.accepted,
                        "added": result.added,
                        "rejected": len(result.rejected),
                        "until": body.until,
                    },
                )
        return answer(result)

    async def _grant_all(
        self, channel_id: int, ids: dict[int, int], body: ImportBody
    ) -> tuple[int, list[Rejected]]:
        until = body.until.isoformat() if body.until else None

        async def one(user: int) -> tuple[int, bool | str]:
            reply = await self.billing.ask(
                "POST",
                "/internal/grants",
                {
                    "telegram_user_id": user,
                    "channel_id": channel_id,
                    "until": until,
                    "reason": body.reason,
                },
            )
            if reply.status_code == 200:
                return user, bool(reply.json().get("applied"))
            return user, str(reply.json().get("detail") or reply.status_code)[:200]

        # billing unreachable stops the import with 503; what was granted stays granted.
        results = await each([one(user) for user in ids])
        added = sum(1 for _, outcome in results if outcome is True)
        refused = [
            Rejected(ids[user], str(user), outcome)
            for user, outcome in results
            if isinstance(outcome, str)
        ]
        return added, refused

    async def grant(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewGrant, limit=4096)
        reply = await self.billing.ask("POST", "/internal/grants", msgspec.to_builtins(body))
        if reply.status_code == 200:
            async with store.connection(runtime(request).pool) as conn, conn.transaction():
                await audit(
                    conn,
                    caller,
                    self.clock,
                    "grants.add",
                    f"channel:{body.channel_id}:user:{body.telegram_user_id}",
                    None,
                    {**msgspec.to_builtins(body), **reply.json()},
                )
        return relayed(reply)
