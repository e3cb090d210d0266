"""Statistics for the owner's panel: the funnel (start -> gate shown -> passed -> delivered), new
people, blocks, joins per campaign and revenue per currency over a range of days in the
workspace's zone, with a series per hour or per day, and the series as CSV.

Closed hours come from botedge's roll-up (`stat_hours`); the hours after its watermark (the
current one at least) are counted from the raw events as they are asked for.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import errors, store
from panel_api.access import Caller, answer, query
from panel_api.exports import cell
from panel_api.fields import Id
from shared.clock import Clock
from shared.currencies import major_text
from shared.web import runtime

Granularity = Literal["hour", "day"]
# The longest range each granularity shows.
MOST_DAYS = {"hour": 31, "day": 366}
FUNNEL = ("start", "gate_shown", "gate_passed", "content_delivered")
SERIES = (*FUNNEL, "new_person", "blocked", "campaign_join", "campaign_leave", "payment")


FIRST_DAY = dt.date(2000, 1, 1)
LAST_DAY = dt.date(9999, 12, 30)


class StatsQuery(msgspec.Struct, forbid_unknown_fields=True):
    # Days in the workspace's zone, both included, from 2000-01-01 to 9999-12-30; the last 30
    # days unless given.
    from_: Annotated[dt.date | None, msgspec.Meta(title="from")] = msgspec.field(
        default=None, name="from"
    )
    to: dt.date | None = None
    granularity: Granularity = "day"
    bot_id: Id | None = None
    content_id: Id | None = None
    campaign_id: Id | None = None


class Funnel(msgspec.Struct):
    start: int
    gate_shown: int
    gate_passed: int
    content_delivered: int


class CampaignJoins(msgspec.Struct):
    campaign_id: int
    name: str
    joins: int
    leaves: int


class Revenue(msgspec.Struct):
    currency: str
    amount: str
    payments: int


class Point(msgspec.Struct):
    """One hour (its start) or one day of the series."""

    at: str
    start: int
    gate_shown: int
    gate_passed: int
    content_delivered: int
    new_person: int
    blocked: int
    campaign_join: int
    campaign_leave: int
    payment: int


class Stats(msgspec.Struct):
    from_: dt.date = msgspec.field(name="from")
    to: dt.date
    granularity: Granularity
    zone: str
    funnel: Funnel
    new_people: int
    blocked: int
    campaigns: list[CampaignJoins]
    revenue: list[Revenue]
    series: list[Point]


class Statistics:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def stats(self, request: Request, caller: Caller) -> Response:
        return answer(await self._read(request))

    async def stats_csv(self, request: Request, caller: Caller) -> Response:
        found = await self._read(request)
        lines = [",".join(("at", *SERIES))]
        lines += [
            ",".join(cell(v) for v in (p.at, *(getattr(p, k) for k in SERIES)))
            for p in found.series
        ]
        name = f"stats-{found.from_}-{found.to}-{found.granularity}.csv"
        return Response(
            "\ufeff" + "\r\n".join(lines) + "\r\n",
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    async def _read(self, request: Request) -> Stats:
        where = query(request, StatsQuery)
        for name, day in (("from", where.from_), ("to", where.to)):
            # Nothing is counted before 2000; year 1 in a zone east of UTC is not a timestamp.
            if day is not None and not FIRST_DAY <= day <= LAST_DAY:
                raise errors.InvalidValue(
                    f"{name} must be between {FIRST_DAY} and {LAST_DAY}",
                    field=name,
                    code="out-of-range",
                )
        async with store.connection(runtime(request).pool) as conn:
            bounds = await store.row(
                conn, "stats_bounds", {"now": self.clock.now(), "from": where.from_, "to": where.to}
            )
            if bounds is None:
                raise errors.StoreError("the workspace has no row")
            start, to = bounds["first"], bounds["last"]
            if start > to:
                raise errors.InvalidValue(
                    "the range ends before it starts", field="from", code="out-of-range"
                )
            if (to - start).days + 1 > MOST_DAYS[where.granularity]:
                raise errors.InvalidValue(
                    f"at most {MOST_DAYS[where.granularity]} days by {where.granularity}",
                    field="to",
                    code="out-of-range",
                )
            params = {
                "from": start,
                "to": to,
                "granularity": where.granularity,
                "bot_id": where.bot_id,
                "content_id": where.content_id,
                "campaign_id": where.campaign_id,
            }
            slots = await store.rows(conn, "stats_slots", params)
            counts = await store.rows(conn, "stats_counts", {**params, **bounds})
            campaigns = await store.rows(conn, "stats_campaigns", params)
        return _assemble(
            start, to, where.granularity, str(bounds["zone"]), slots, counts, campaigns
        )


def _assemble(
    start: dt.date,
    to: dt.date,
    granularity: Granularity,
    zone: str,
    slots: list[dict[str, Any]],
    counts: list[dict[str, Any]],
    campaigns: list[dict[str, Any]],
) -> Stats:
    """The counts put in their slots (every hour or day of the range, empty ones as zeros)."""
    keys = [_key(row) for row in slots]
    points: dict[str, dict[str, int]] = {key: dict.fromkeys(SERIES, 0) for key in keys}
    totals = dict.fromkeys(SERIES, 0)
    money: dict[str, list[int]] = {}
    for row in counts:
        kind, events = str(row["kind"]), int(row["events"])
        if kind not in totals:
            continue
        point = points.get(_key(row))
        if point is not None:
            point[kind] += events
        totals[kind] += events
        if kind == "payment":
            paid = money.setdefault(str(row["currency"]), [0, 0])
            paid[0] += int(row["amount"])
            paid[1] += events
    return Stats(
        start,
        to,
        granularity,
        zone,
        Funnel(*(totals[k] for k in FUNNEL)),
        totals["new_person"],
        totals["blocked"],
        msgspec.convert(campaigns, list[CampaignJoins]),
        [
            Revenue(currency, major_text(amount, currency), n)
            for currency, (amount, n) in sorted(money.items())
        ],
        [Point(key, **points[key]) for key in keys],
    )


def _key(row: dict[str, Any]) -> str:
    """A slot's name: its day, or its hour's start in UTC."""
    if row["day"] is not None:
        return str(row["day"].isoformat())
    return str(row["hour"].astimezone(dt.UTC).isoformat().replace("+00:00", "Z"))
