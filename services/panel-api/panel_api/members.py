"""Acting on many members at once: extend the chosen ones by a number of days, or remove them.

Memberships are billing's (DESIGN: who owns what): each extension is a grant asked of billing
(`/internal/grants`) until a date. The date is fixed per person and channel the first time a
request is made (`bulk_extensions`, keyed by the request's key), so the same request sent again
asks for the same dates, which billing grants once; each person's outcome is answered. A
removal is asked of billing (`/internal/removals`) under a key of the request's key, person and
channel, which billing applies once: a retry after a lost answer removes nobody twice and never
undoes a payment made since.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import store
from panel_api.access import Caller, answer, audit
from panel_api.fields import Id
from panel_api.internal import Internal, each
from shared.clock import Clock
from shared.errors import json_body
from shared.web import runtime

RequestKey = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{8,64}$")]


class Chosen(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    person_id: Id
    channel_id: Id


class BulkExtension(msgspec.Struct, forbid_unknown_fields=True):
    # Made once by the page for one press: the same key again is the same request.
    request_key: RequestKey
    days: Annotated[int, msgspec.Meta(ge=1, le=3650)]
    members: Annotated[list[Chosen], msgspec.Meta(min_length=1, max_length=200)]


class Extended(msgspec.Struct):
    person_id: int
    channel_id: int
    # extended: billing moved the paid time to `until`; unchanged: it was there already (this
    # request was applied before); not-found: no such membership; failed: billing refused,
    # `detail` says why.
    outcome: Literal["extended", "unchanged", "not-found", "failed"]
    until: dt.datetime | None = None
    detail: str | None = None


class BulkExtended(msgspec.Struct):
    request_key: str
    days: int
    results: list[Extended]


class BulkRemoval(msgspec.Struct, forbid_unknown_fields=True):
    # Made once by the page for one press: the same key again is the same request.
    request_key: RequestKey
    members: Annotated[list[Chosen], msgspec.Meta(min_length=1, max_length=200)]


class Removed(msgspec.Struct):
    person_id: int
    channel_id: int
    # removed: out of the channel now; unchanged: out already, or this request was applied
    # before; not-found: no such membership; failed: billing refused, `detail` says why.
    outcome: Literal["removed", "unchanged", "not-found", "failed"]
    detail: str | None = None


class BulkRemoved(msgspec.Struct):
    request_key: str
    results: list[Removed]


class Fixed(msgspec.Struct):
    """The date a member is extended to by a request, as first fixed."""

    until: dt.datetime
    days: int
    telegram_user_id: int


class Members:
    def __init__(self, clock: Clock, billing: Internal) -> None:
        self.clock = clock
        self.billing = billing

    async def extend(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, BulkExtension, limit=65536)
        chosen = list(dict.fromkeys(body.members))
        now = self.clock.now()
        fixed: dict[Chosen, Fixed] = {}
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            for one in chosen:
                params = {
                    "key": body.request_key,
                    "person_id": one.person_id,
                    "channel_id": one.channel_id,
                    "days": body.days,
                    "now": now,
                    "member_id": caller.id,
                }
                row = await store.row(conn, "fix_extension", params)
                if row is not None:
                    fixed[one] = msgspec.convert(row, Fixed)
            target = f"bulk:{body.request_key}"
            after = {"days": body.days, "members": len(chosen), "found": len(fixed)}
            await audit(conn, caller, self.clock, "memberships.extend", target, None, after)
        results = await each([self._grant(one, fixed.get(one)) for one in chosen])
        return answer(BulkExtended(body.request_key, body.days, results))

    async def remove(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, BulkRemoval, limit=65536)
        chosen = list(dict.fromkeys(body.members))
        found: dict[Chosen, int] = {}
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            for one in chosen:
                params = {"person_id": one.person_id, "channel_id": one.channel_id}
                row = await store.row(conn, "membership_person", params)
                if row is not None:
                    found[one] = int(row["telegram_user_id"])
            target = f"bulk:{body.request_key}"
            after = {"members": len(chosen), "found": len(found)}
            await audit(conn, caller, self.clock, "memberships.remove", target, None, after)
        reason = f"removed by {caller.email}"[:200]
        results = await each(
            [self._remove(body.request_key, one, found.get(one), reason) for one in chosen]
        )
        return answer(BulkRemoved(body.request_key, results))

    async def _remove(self, key: str, one: Chosen, user: int | None, reason: str) -> Removed:
        if user is None:
            return Removed(one.person_id, one.channel_id, "not-found")
        removal = {
            "telegram_user_id": user,
            "channel_id": one.channel_id,
            "request_key": f"{key}:{one.person_id}:{one.channel_id}",
            "reason": reason,
        }
        reply = await self.billing.ask("POST", "/internal/removals", removal)
        if reply.status_code == 404:
            return Removed(one.person_id, one.channel_id, "not-found")
        if reply.status_code != 200:
            detail = str(reply.json().get("detail", reply.status_code))[:200]
            return Removed(one.person_id, one.channel_id, "failed", detail)
        applied = bool(reply.json().get("applied"))
        return Removed(one.person_id, one.channel_id, "removed" if applied else "unchanged")

    async def _grant(self, one: Chosen, row: Fixed | None) -> Extended:
        if row is None:
            return Extended(one.person_id, one.channel_id, "not-found")
        until = row.until
        grant = {
            "telegram_user_id": row.telegram_user_id,
            "channel_id": one.channel_id,
            "until": until.isoformat(),
            "reason": f"extended by {row.days} days",
        }
        reply = await self.billing.ask("POST", "/internal/grants", grant)
        if reply.status_code != 200:
            detail = str(reply.json().get("detail", reply.status_code))[:200]
            return Extended(one.person_id, one.channel_id, "failed", until, detail)
        applied = bool(reply.json().get("applied"))
        return Extended(
            one.person_id, one.channel_id, "extended" if applied else "unchanged", until
        )
