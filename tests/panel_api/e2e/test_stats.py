"""Statistics: botedge's hourly roll-up in the workspace's zone and the panel's series over it,
each equal to a count over the raw events: in Asia/Tehran (hours start on the half hour) and
across Europe/Berlin's daylight-saving changes (days of 23 and 25 hours), part rolled up and
part read live, then all rolled up, again, and after a change of zone."""

from __future__ import annotations

import asyncio
import datetime as dt
import random
from collections import Counter
from zoneinfo import ZoneInfo

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from botedge.rollup import hour_start, roll_up
from tests.botedge.conftest import OpenPool
from tests.panel_api.e2e.conftest import Panel

KINDS = ("start", "gate_shown", "gate_passed", "content_delivered", "blocked")
ZONES = ("Asia/Tehran", "Europe/Berlin", "Asia/Kathmandu", "America/St_Johns", "UTC")


# The database only answers: nothing in it changes between examples.
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    at=st.datetimes(
        min_value=dt.datetime(2026, 1, 1),
        max_value=dt.datetime(2027, 12, 31),
        timezones=st.just(dt.UTC),
    ),
    zone=st.sampled_from(ZONES),
)
def test_hour_start__python_as_postgres_has_it(
    database_url: str, at: dt.datetime, zone: str
) -> None:
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT date_trunc('hour', %s::timestamptz, %s)", (at, zone)).fetchone()
    assert row is not None
    assert hour_start(at, ZoneInfo(zone)) == row[0]


def events(
    panel: Panel, start: dt.datetime, hours: int, n: int, seed: int
) -> list[tuple[str, dt.datetime]]:
    """`n` events of the panel's bot at random moments over `hours` from `start`."""
    rng = random.Random(seed)
    made = [
        (
            rng.choice(KINDS),
            start + dt.timedelta(seconds=rng.randrange(hours * 3600)),
            rng.choice((None, 1, 2)),
        )
        for _ in range(n)
    ]
    with psycopg.connect(panel.database_url) as conn:
        with conn.cursor().copy(
            "COPY stat_events (kind, at, content_id, bot_id) FROM STDIN"
        ) as copy:
            for kind, at, content in made:
                copy.write_row((kind, at, content, panel.bot))
    return made


def series(
    panel: Panel, first: dt.date, last: dt.date, granularity: str, content: int | None = None
) -> dict[str, Counter[str]]:
    only = f"&content_id={content}" if content else ""
    answer = panel.call(
        "GET", f"/v1/stats?from={first}&to={last}&granularity={granularity}{only}", role="viewer"
    )
    assert answer.status_code == 200, answer.text
    return {
        point["at"]: Counter({k: point[k] for k in KINDS if point[k]})
        for point in answer.json()["series"]
    }


def expected(
    made: list[tuple[str, dt.datetime, int | None]],
    zone: ZoneInfo,
    first: dt.date,
    last: dt.date,
    granularity: str,
    content: int | None = None,
) -> dict[str, Counter[str]]:
    counted: dict[str, Counter[str]] = {}
    for kind, at, of in made:
        if content is not None and of != content:
            continue
        day = at.astimezone(zone).date()
        if not first <= day <= last:
            continue
        if granularity == "day":
            key = day.isoformat()
        else:
            key = hour_start(at, zone).isoformat().replace("+00:00", "Z")
        counted.setdefault(key, Counter())[kind] += 1
    return counted


def same(got: dict[str, Counter[str]], want: dict[str, Counter[str]]) -> None:
    assert {k: v for k, v in got.items() if v} == want


@pytest.mark.parametrize(
    ("zone_name", "first", "last"),
    [
        ("Asia/Tehran", dt.date(2026, 6, 10), dt.date(2026, 6, 13)),
        ("Europe/Berlin", dt.date(2026, 3, 27), dt.date(2026, 3, 31)),
        ("Europe/Berlin", dt.date(2026, 10, 23), dt.date(2026, 10, 27)),
    ],
)
def test_rollup__every_series_equals_a_count_over_the_raw_events(
    panel: Panel, open_pool: OpenPool, zone_name: str, first: dt.date, last: dt.date
) -> None:
    zone = ZoneInfo(zone_name)
    with psycopg.connect(panel.database_url) as conn:
        conn.execute("UPDATE workspace SET time_zone = %s", (zone_name,))
    # A day either side of the range, so its edges are tested too.
    start = dt.datetime.combine(first, dt.time(), zone) - dt.timedelta(days=1)
    hours = ((last - first).days + 3) * 24
    made = events(panel, start, hours, 4000, seed=first.toordinal())

    async def rolled(now: dt.datetime) -> int:
        async with open_pool() as pool:
            return await roll_up(pool, now, keep_days=3650)

    def all_equal() -> None:
        for granularity in ("hour", "day"):
            for content in (None, 2):
                same(
                    series(panel, first, last, granularity, content),
                    expected(made, zone, first, last, granularity, content),
                )

    # Half rolled up, half read live.
    middle = dt.datetime.combine(first + dt.timedelta(days=2), dt.time(13, 17), zone)
    assert asyncio.run(rolled(middle)) > 0
    [(done_until,)] = panel.query("SELECT done_until FROM stat_rollup")
    assert done_until == hour_start(middle - dt.timedelta(minutes=2), zone)
    all_equal()
    hourly = panel.call("GET", f"/v1/stats?from={first}&to={last}&granularity=hour").json()
    slots = Counter(
        dt.datetime.fromisoformat(p["at"]).astimezone(zone).date() for p in hourly["series"]
    )
    if zone_name == "Europe/Berlin":
        # The days of the change: 23 hours in spring, 25 in autumn; the others 24.
        assert sorted(set(slots.values())) == ([23, 24] if first.month == 3 else [24, 25])
    else:
        assert set(slots.values()) == {24}
        # Tehran's hours start at :30 UTC.
        assert {p["at"][14:16] for p in hourly["series"]} == {"30"}

    # All of it rolled up (in rounds of at most a week), then once more: nothing changes.
    now = dt.datetime.now(dt.UTC)
    while asyncio.run(rolled(now)):
        pass
    all_equal()
    before = panel.query("SELECT * FROM stat_hours ORDER BY 1, 2, 3, 4, 5, 6")
    assert asyncio.run(rolled(now)) == 0
    assert panel.query("SELECT * FROM stat_hours ORDER BY 1, 2, 3, 4, 5, 6") == before

    # Another zone: the roll-up starts over in it, and the series still equal the events.
    other = "UTC" if zone_name != "UTC" else "Asia/Tehran"
    with psycopg.connect(panel.database_url) as conn:
        conn.execute("UPDATE workspace SET time_zone = %s", (other,))
    zone = ZoneInfo(other)
    all_equal()  # read live while the roll-up is in the old zone
    while asyncio.run(rolled(now)):
        pass
    assert panel.query("SELECT zone FROM stat_rollup") == [(other,)]
    all_equal()


def test_stats__funnel_totals_filters_and_refusals(panel: Panel) -> None:
    today = dt.datetime.now(dt.UTC)
    with psycopg.connect(panel.database_url) as conn:
        for kind, n, content in (
            ("start", 10, None),
            ("gate_shown", 8, 5),
            ("gate_passed", 6, 5),
            ("content_delivered", 5, 5),
            ("gate_shown", 2, 6),
        ):
            for _ in range(n):
                conn.execute(
                    "INSERT INTO stat_events (at, kind, bot_id, content_id)"
                    " VALUES (%s, %s, %s, %s)",
                    (today, kind, panel.bot, content),
                )
        conn.execute(
            "INSERT INTO stat_events (at, kind, bot_id, amount, currency) VALUES"
            " (%s, 'payment', %s, 1250, 'USD'), (%s, 'payment', %s, 750, 'USD'),"
            " (%s, 'payment', %s, 300, 'XTR')",
            (today, panel.bot) * 3,
        )
    whole = panel.call("GET", "/v1/stats", role="viewer").json()
    assert whole["funnel"] == {
        "start": 10,
        "gate_shown": 10,
        "gate_passed": 6,
        "content_delivered": 5,
    }
    assert whole["revenue"] == [
        {"currency": "USD", "amount": "20.00", "payments": 2},
        {"currency": "XTR", "amount": "300", "payments": 1},
    ]
    assert len(whole["series"]) == 30
    one = panel.call("GET", "/v1/stats?content_id=5", role="viewer").json()
    assert one["funnel"] == {"start": 0, "gate_shown": 8, "gate_passed": 6, "content_delivered": 5}
    assert one["revenue"] == []
    csv = panel.call(
        "GET",
        "/v1/stats.csv?granularity=hour&from=" + str(today.date()) + "&to=" + str(today.date()),
        role="viewer",
    )
    assert csv.status_code == 200
    lines = csv.text.lstrip("\ufeff").splitlines()
    assert lines[0].startswith("at,start,gate_shown")
    assert len(lines) == 25
    assert sum(int(line.split(",")[1]) for line in lines[1:]) == 10
    for query, field in (
        ("from=2026-05-02&to=2026-05-01", "from"),
        ("from=2025-01-01&to=2026-05-01", "to"),
        ("granularity=hour&from=2026-01-01&to=2026-03-01", "to"),
        # Year 1 east of UTC is before any timestamp: refused, not a 500 (Schemathesis found it).
        ("from=0001-01-01&to=2000-01-01", "from"),
        ("from=9999-12-01&to=9999-12-31", "to"),
    ):
        refused = panel.call("GET", f"/v1/stats?{query}")
        assert refused.status_code == 422, query
        assert refused.json()["errors"][0]["field"] == field
