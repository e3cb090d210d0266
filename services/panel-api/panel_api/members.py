"""Acting on many members at once: extend the chosen ones by a number of days.

Memberships are billing's (DESIGN: who owns what): each extension is a grant asked of billing
(`/internal/grants`) until a date. The date is fixed per person and channel the first time a
request is made (`bulk_extensions`, keyed by the request's key), so the same request sent again
asks for the same dates, which billing grants once; each person's outcome is answered.
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
from panel_api.internal import Internal
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
        results = [await self._grant(one, fixed.get(one)) for one in chosen]
        return answer(BulkExtended(body.request_key, body.days, results))

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
