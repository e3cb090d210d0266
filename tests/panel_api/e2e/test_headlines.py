"""The dashboard's headlines over a month of made-up business, each figure checked against a
count over the ledger's own rows: memberships active now and at the period's start, begun and
lost, renewals due, trials ended and paid for, payments received and monthly recurring revenue
per currency (now and at the period's start), Telegram Stars from subscriptions and one-off
payments apart, for the period and the one before it."""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Iterator
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
import pytest
from psycopg.rows import dict_row

from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot
from tests.conftest import HTTP, TEST_BCRYPT_ROUNDS, panel_settings
from tests.panel_api.e2e.conftest import PASSWORD, owner_and_viewer
from tests.panel_api.history import add_stars, seed_history

ZONE = "Asia/Tehran"


@pytest.fixture
def business(database_url: str) -> Iterator[tuple[str, str]]:
    insert_bot(database_url)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    assert seed_history(database_url) is True
    add_stars(database_url)
    with psycopg.connect(database_url) as conn:
        conn.execute("UPDATE workspace SET time_zone = %s", (ZONE,))
        # Two trials: one taken before its person paid (paid for since), one never paid for.
        conn.execute(
            "WITH paying AS (SELECT person_id, channel_id, min(paid_at) AS paid_at"
            "  FROM payments WHERE applied GROUP BY 1, 2"
            "  HAVING min(paid_at) > now() - interval '20 days' ORDER BY 1 LIMIT 1),"
            " lapsed AS (SELECT m.person_id, m.channel_id FROM memberships m"
            "  WHERE m.status = 'expired' AND NOT EXISTS (SELECT 1 FROM payments p"
            "   WHERE p.person_id = m.person_id AND p.paid_at > now() - interval '8 days')"
            "  ORDER BY 1 LIMIT 1)"
            " INSERT INTO membership_events (person_id, channel_id, from_status, to_status,"
            "  new_expires_at, cause, until, reason, at)"
            " SELECT person_id, channel_id, 'expired', 'active', paid_at - interval '3 days',"
            "  'trial', paid_at - interval '3 days', 'trial', paid_at - interval '10 days'"
            "  FROM paying"
            " UNION ALL"
            " SELECT person_id, channel_id, 'expired', 'active', now() - interval '2 days',"
            "  'trial', now() - interval '2 days', 'trial', now() - interval '9 days'"
            "  FROM lapsed"
        )
    with serve_in_thread(create_app(panel_settings(database_url))) as url:
        yield url, owner_and_viewer(url)["viewer"]


def rows(database_url: str, sql: str) -> list[dict[str, Any]]:
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        return conn.execute(sql).fetchall()  # type: ignore[arg-type]


def figures(
    database_url: str, since: dt.datetime, before: dt.datetime, until: dt.datetime
) -> dict[str, Any]:
    """The headlines counted here, row by row, from what the tables hold."""
    events = rows(database_url, "SELECT * FROM membership_events ORDER BY id")
    memberships = rows(database_url, "SELECT * FROM memberships")
    payments = rows(
        database_url,
        "SELECT p.*, i.amount_minor AS price, i.period_days, i.plan_id,"
        " i.bundle_channel_ids FROM payments p JOIN invoices i ON i.id = p.invoice_id",
    )
    recurring_charges = {
        t["telegram_payment_charge_id"]: t["is_recurring"]
        for t in rows(database_url, "SELECT * FROM telegram_payments")
    }
    by_membership: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        by_membership[e["person_id"], e["channel_id"]].append(e)

    def active_at(moment: dt.datetime) -> int:
        held = [[e for e in history if e["at"] < moment] for history in by_membership.values()]
        return sum(1 for h in held if h and h[-1]["to_status"] == "active")

    def begun(start: dt.datetime, end: dt.datetime) -> int:
        return sum(1 for h in by_membership.values() if start <= min(e["at"] for e in h) < end)

    def lost(start: dt.datetime, end: dt.datetime) -> int:
        return sum(
            1
            for e in events
            if e["to_status"] == "expired"
            and e["from_status"] != "expired"
            and start <= e["at"] < end
        )

    def trials(start: dt.datetime, end: dt.datetime) -> tuple[int, int]:
        ended = [e for e in events if e["cause"] == "trial" and start <= e["until"] < end]
        paid = [
            e
            for e in ended
            if any(
                p["person_id"] == e["person_id"]
                and p["channel_id"] == e["channel_id"]
                and p["applied"]
                and p["paid_at"] >= e["at"]
                for p in payments
            )
        ]
        return len(ended), len(paid)

    def received(start: dt.datetime, end: dt.datetime) -> dict[str, int]:
        total: Counter[str] = Counter()
        for p in payments:
            if p["applied"] and start <= p["paid_at"] < end:
                total[p["currency"]] += int(p["amount_minor"])
        return dict(total)

    paid_by_id = {p["id"]: p for p in payments}

    def recurring(active: list[tuple[int, int]], moment: dt.datetime | None) -> dict[str, int]:
        """A month of each active membership's last payment (before `moment`, if given)."""
        monthly: dict[str, Decimal] = defaultdict(Decimal)
        for key in active:
            paying = [
                e
                for e in by_membership[key]
                if e["cause"] == "payment" and (moment is None or e["at"] < moment)
            ]
            if not paying:
                continue
            p = paid_by_id[paying[-1]["payment_id"]]
            share = len(p["bundle_channel_ids"] or [0])
            monthly[p["currency"]] += Decimal(p["price"]) * 30 / p["period_days"] / share
        rounded = {c: int(v.quantize(Decimal(1), ROUND_HALF_EVEN)) for c, v in monthly.items()}
        return {c: v for c, v in rounded.items() if v}

    active_now = [(m["person_id"], m["channel_id"]) for m in memberships if m["status"] == "active"]
    active_then = [
        key
        for key, history in by_membership.items()
        if [e for e in history if e["at"] < since]
        and [e for e in history if e["at"] < since][-1]["to_status"] == "active"
    ]

    def stars(start: dt.datetime, end: dt.datetime, renews: bool) -> int:
        return sum(
            int(p["amount_minor"])
            for p in payments
            if p["applied"]
            and p["gateway"] == "telegram_stars"
            and start <= p["paid_at"] < end
            and bool(recurring_charges.get(p["external_payment_id"])) == renews
        )

    def by(key: str) -> dict[tuple[int, str], tuple[int, int]]:
        sums: dict[tuple[int, str], tuple[int, int]] = {}
        for p in payments:
            if p["applied"] and since <= p["paid_at"] < until:
                total, count = sums.get((p[key], p["currency"]), (0, 0))
                sums[p[key], p["currency"]] = (total + int(p["amount_minor"]), count + 1)
        return sums

    now_trials, before_trials = trials(since, until), trials(before, since)
    return {
        "active": {
            "now": sum(1 for m in memberships if m["status"] == "active"),
            "before": active_at(since),
        },
        "new": {"now": begun(since, until), "before": begun(before, since)},
        "lost": {"now": lost(since, until), "before": lost(before, since)},
        "renewals_due": sum(
            1
            for m in memberships
            if m["status"] == "active" and until <= m["expires_at"] < until + dt.timedelta(days=7)
        ),
        "trials_ended": {"now": now_trials[0], "before": before_trials[0]},
        "trials_paid": {"now": now_trials[1], "before": before_trials[1]},
        "received": received(since, until),
        "received_before": received(before, since),
        "by_channel": by("channel_id"),
        "by_plan": by("plan_id"),
        "recurring": recurring(active_now, None),
        "recurring_before": recurring(active_then, since),
        "stars": {
            "subscriptions": {
                "now": stars(since, until, True),
                "before": stars(before, since, True),
            },
            "one_off": {"now": stars(since, until, False), "before": stars(before, since, False)},
        },
    }


@pytest.mark.parametrize("period", ["7", "30", "90", "month"])
def test_headlines__each_figure_is_the_count_over_the_ledger(
    business: tuple[str, str], database_url: str, period: str
) -> None:
    url, viewer = business
    answer = HTTP.get(
        f"{url}/v1/dashboard/headlines",
        params={"period": period},
        headers={"Authorization": f"Bearer {viewer}"},
    )
    assert answer.status_code == 200, answer.text
    got = answer.json()
    since, before, until = (dt.datetime.fromisoformat(got[k]) for k in ("since", "before", "until"))
    # The period starts at midnight in the workspace's zone, and the one before is as long.
    local = since.astimezone(ZoneInfo(ZONE))
    assert (local.hour, local.minute) == (0, 0)
    today = until.astimezone(ZoneInfo(ZONE)).date()
    first = today.replace(day=1) if period == "month" else today - dt.timedelta(int(period) - 1)
    assert local.date() == first
    assert since - before == until - since
    expected = figures(database_url, since, before, until)

    def by_currency(items: list[dict[str, str]]) -> dict[str, int]:
        return {i["currency"]: int(i["amount_minor"]) for i in items if int(i["amount_minor"])}

    assert {
        k: got[k] for k in ("active", "new", "lost", "renewals_due", "trials_ended", "trials_paid")
    } == {
        k: expected[k]
        for k in ("active", "new", "lost", "renewals_due", "trials_ended", "trials_paid")
    }
    assert by_currency(got["received"]) == {c: v for c, v in expected["received"].items() if v}
    assert by_currency(got["received_before"]) == {
        c: v for c, v in expected["received_before"].items() if v
    }
    assert by_currency(got["recurring"]) == expected["recurring"]
    assert by_currency(got["recurring_before"]) == expected["recurring_before"]
    assert got["stars"] == expected["stars"]
    # By channel and by plan, each currency's most first.
    for name, key in (("by_channel", "channel_id"), ("by_plan", "plan_id")):
        shown = {
            (r[key], r["currency"]): (int(r["amount_minor"]), r["payments"]) for r in got[name]
        }
        assert shown == expected[name], name
        for currency in {r["currency"] for r in got[name]}:
            amounts = [int(r["amount_minor"]) for r in got[name] if r["currency"] == currency]
            assert amounts == sorted(amounts, reverse=True)
    # The month of history has something in each figure that counts.
    if period == "30":
        assert got["active"]["now"] and got["new"]["now"] and got["lost"]["now"]
        assert got["trials_ended"]["now"] == 2 and got["trials_paid"]["now"] == 1
        assert got["received"] and got["recurring"] and got["by_channel"] and got["by_plan"]
        assert got["recurring_before"]
        # Stars apart: two subscriptions and one one-off payment in the last 30 days, the
        # month before one one-off.
        assert got["stars"] == {
            "subscriptions": {"now": 500, "before": 0},
            "one_off": {"now": 600, "before": 100},
        }


def test_headlines__a_period_the_api_does_not_offer_is_refused_at_its_field(
    business: tuple[str, str],
) -> None:
    url, viewer = business
    refused = HTTP.get(
        f"{url}/v1/dashboard/headlines",
        params={"period": "14"},
        headers={"Authorization": f"Bearer {viewer}"},
    )
    assert refused.status_code == 422
    assert refused.json()["errors"] == [{"field": "period", "code": "not-one-of"}]
