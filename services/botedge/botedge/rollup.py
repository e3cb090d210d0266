"""The statistics' hourly roll-up: closed hours of `stat_events` (and of new people, from
`bot_people`) counted once into `stat_hours`, per bot, kind, content, campaign and currency,
in the workspace's time zone. One worker does it at a time, under the lease `stats-rollup`.

An hour is closed GRACE after it ends (an update's transaction stamps its events when it runs
and commits moments later). Each round is one transaction: the hours from the watermark
`done_until` up to the last closed one are counted, written (a recount replaces a count, so
a round repeated changes nothing) and the watermark moves. A change of the workspace's zone
starts the roll-up over from the first event. Events older than `keep_days`, once rolled up,
are pruned.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from botedge import sqlq
from botedge.db import connection
from shared.db import Pool

Q = sqlq.Q

GRACE = dt.timedelta(minutes=2)
# Hours one round counts at most, so a long backlog is taken in bounded transactions.
ROUND_HOURS = 24 * 7


def hour_start(at: dt.datetime, zone: ZoneInfo) -> dt.datetime:
    """The start of the hour `at` falls in on the clocks of `zone`, as PostgreSQL's
    `date_trunc('hour', at, zone)` has it: on the half hour in Asia/Tehran, and the repeated
    hour of a daylight-saving change kept apart by its offset."""
    local = at.astimezone(zone)
    return local.replace(minute=0, second=0, microsecond=0).astimezone(dt.UTC)


async def roll_up(
    pool: Pool,
    now: dt.datetime | None = None,
    *,
    keep_days: int = 90,
    grace: dt.timedelta = GRACE,
) -> int:
    """One round up to `now` (the database's clock unless told: a worker whose own clock ran
    ahead must not close hours still being written); how many hours it closed."""
    async with connection(pool) as conn, conn.transaction():
        cur = await conn.execute(Q["rollup_state"])
        state = await cur.fetchone()
        if state is None:
            return 0
        now = now or state["now"]
        zone_name = str(state["workspace_zone"])
        zone = ZoneInfo(zone_name)
        done_until = state["done_until"]
        if state["zone"] != zone_name:
            # First round, or the zone changed: every hour is counted again from the start.
            first = state["first_at"] or now
            done_until = hour_start(first, zone)
            await conn.execute(Q["rollup_clear"])
            await conn.execute(Q["rollup_restart"], {"zone": zone_name, "done_until": done_until})
        until = min(hour_start(now - grace, zone), done_until + dt.timedelta(hours=ROUND_HOURS))
        if until <= done_until:
            return 0
        await conn.execute(
            Q["rollup_hours"], {"zone": zone_name, "from": done_until, "until": until}
        )
        await conn.execute(Q["rollup_done"], {"until": until})
        await conn.execute(
            Q["prune_stat_events"],
            {"before": min(until, now - dt.timedelta(days=keep_days))},
        )
    return int((until - done_until) / dt.timedelta(hours=1))
