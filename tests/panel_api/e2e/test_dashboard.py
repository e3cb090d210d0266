"""The dashboard's figures: what needs the owner, and revenue by day of the workspace's time
zone and by currency."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from zoneinfo import ZoneInfo

import psycopg
import pytest

from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot
from tests.conftest import HTTP, TEST_BCRYPT_ROUNDS, panel_settings
from tests.panel_api.e2e.conftest import PASSWORD, owner_and_viewer


@pytest.fixture
def board(database_url: str) -> Iterator[tuple[str, dict[str, str]]]:
    insert_bot(database_url)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    with serve_in_thread(create_app(panel_settings(database_url))) as url:
        yield url, owner_and_viewer(url)


def paid(
    conn: psycopg.Connection,
    n: int,
    at: dt.datetime,
    minor: int,
    currency: str,
    *,
    applied: bool = True,
) -> None:
    conn.execute(
        "WITH person AS (INSERT INTO people (telegram_user_id) VALUES (%(user)s) RETURNING id),"
        " plan AS (SELECT id, channel_id FROM plans WHERE is_default LIMIT 1),"
        " invoice AS (INSERT INTO invoices (order_reference, person_id, channel_id, plan_id,"
        "  amount_minor, currency, period_days, grace_days, gateway, status, expires_at)"
        "  SELECT 'ref-' || %(user)s, person.id, plan.channel_id, plan.id, %(minor)s,"
        "   %(currency)s, 30, 3, 'subgate', 'paid', now() FROM person, plan"
        "  RETURNING id, person_id, channel_id)"
        " INSERT INTO payments (gateway, external_payment_id, invoice_id, person_id, channel_id,"
        "  amount_minor, currency, paid_at, applied)"
        " SELECT 'subgate', 'pay-' || %(user)s, id, person_id, channel_id, %(minor)s,"
        "  %(currency)s, %(at)s, %(applied)s FROM invoice",
        {"user": 500 + n, "minor": minor, "currency": currency, "at": at, "applied": applied},
    )


def test_dashboard__revenue_by_day_in_the_workspace_zone_and_counts(
    board: tuple[str, dict[str, str]], database_url: str
) -> None:
    url, tokens = board
    owner = {"Authorization": f"Bearer {tokens['owner']}"}
    zone = ZoneInfo("Asia/Tehran")
    assert (
        HTTP.patch(
            f"{url}/v1/workspace", json={"time_zone": "Asia/Tehran"}, headers=owner
        ).status_code
        == 200
    )
    today = dt.datetime.now(zone).date()
    # 00:15 in Tehran is still the day before in UTC: it counts for Tehran's day.
    early = dt.datetime.combine(today - dt.timedelta(days=2), dt.time(0, 15), zone)
    late = dt.datetime.combine(today - dt.timedelta(days=3), dt.time(23, 50), zone)
    with psycopg.connect(database_url) as conn:
        paid(conn, 1, early, 500, "USD")
        paid(conn, 2, early + dt.timedelta(minutes=5), 250, "USD")
        paid(conn, 3, late, 9_900, "UAH")
        paid(conn, 4, early, 100, "USD", applied=False)  # kept, not money received
        paid(
            conn,
            5,
            dt.datetime.combine(today - dt.timedelta(days=30), dt.time(12), zone),
            700,
            "USD",
        )  # a day before the 30
        conn.execute(
            "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload, state, attempt)"
            " SELECT id, 1, 1, 'message', '{}', 'dead', 5 FROM bots"
        )
    board_answer = HTTP.get(
        f"{url}/v1/dashboard", headers={"Authorization": f"Bearer {tokens['viewer']}"}
    )
    assert board_answer.status_code == 200, board_answer.text
    figures = board_answer.json()
    assert figures["revenue"] == [
        {
            "day": str(today - dt.timedelta(days=3)),
            "currency": "UAH",
            "amount_minor": "9900",
            "amount": "99.00",
        },
        {
            "day": str(today - dt.timedelta(days=2)),
            "currency": "USD",
            "amount_minor": "750",
            "amount": "7.50",
        },
    ]
    assert (figures["time_zone"], figures["dead_updates"], figures["ad_orders_waiting"]) == (
        "Asia/Tehran",
        1,
        0,
    )
    # The 30 days' totals, summed by the database: the unapplied payment and the one a day
    # before the 30 left out.
    assert [(t["currency"], t["amount"]) for t in figures["revenue_totals"]] == [
        ("UAH", "99.00"),
        ("USD", "7.50"),
    ]
    # The counts beside the pages are the dashboard's.
    attention = HTTP.get(
        f"{url}/v1/attention", headers={"Authorization": f"Bearer {tokens['viewer']}"}
    ).json()
    assert attention == {
        key: figures[key]
        for key in (
            "ad_orders_waiting",
            "access_events_failing",
            "dead_updates",
            "bots_with_problems",
        )
    }
    assert HTTP.get(f"{url}/v1/dashboard").status_code == 401


def test_dashboard__members_active_and_in_grace_at_the_end_of_each_day(
    board: tuple[str, dict[str, str]], database_url: str
) -> None:
    url, tokens = board
    owner = {"Authorization": f"Bearer {tokens['owner']}"}
    HTTP.patch(f"{url}/v1/workspace", json={"time_zone": "Asia/Tehran"}, headers=owner)
    zone = ZoneInfo("Asia/Tehran")
    today = dt.datetime.now(zone).date()

    def at(days_ago: int, hour: int, minute: int = 0) -> dt.datetime:
        return dt.datetime.combine(today - dt.timedelta(days=days_ago), dt.time(hour, minute), zone)

    histories = {
        # Active ten days ago, in grace from three days ago, expired yesterday.
        701: [
            (None, "active", at(10, 12)),
            ("active", "grace", at(3, 12)),
            ("grace", "expired", at(1, 12)),
        ],
        # Active since before the 30 days, and still.
        702: [(None, "active", at(40, 12))],
        # 00:15 in Tehran is the day before in UTC: it counts from Tehran's day.
        703: [(None, "active", at(5, 0, 15))],
    }
    with psycopg.connect(database_url) as conn:
        [(channel,)] = conn.execute("SELECT channel_id FROM plans WHERE is_default LIMIT 1")
        for user, events in histories.items():
            [(person,)] = conn.execute(
                "INSERT INTO people (telegram_user_id) VALUES (%s) RETURNING id", (user,)
            )
            last = events[-1]
            conn.execute(
                "INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,"
                " next_check_at, updated_at) VALUES (%s, %s, %s, now(), 3, %s, now())",
                (person, channel, last[1], None if last[1] == "expired" else last[2]),
            )
            for before, after, when in events:
                conn.execute(
                    "INSERT INTO membership_events (person_id, channel_id, from_status,"
                    " to_status, new_expires_at, cause, at) VALUES (%s, %s, %s, %s, %s,"
                    " 'sweep', %s)",
                    (person, channel, before, after, when, when),
                )
    members = HTTP.get(f"{url}/v1/dashboard", headers=owner).json()["members"]
    assert [m["day"] for m in members] == [
        str(today - dt.timedelta(days=n)) for n in range(29, -1, -1)
    ]
    by_day = {
        (today - dt.date.fromisoformat(m["day"])).days: (m["active"], m["grace"]) for m in members
    }
    assert by_day[29] == by_day[11] == (1, 0)  # 702 alone
    assert by_day[10] == by_day[6] == (2, 0)  # and 701
    assert by_day[5] == by_day[4] == (3, 0)  # and 703
    assert by_day[3] == by_day[2] == (2, 1)  # 701 in grace
    assert by_day[1] == by_day[0] == (2, 0)  # 701 gone


def test_dashboard__the_ad_shops_income_counts_by_the_coin_paid(
    board: tuple[str, dict[str, str]], database_url: str
) -> None:
    url, tokens = board
    today = dt.datetime.now(dt.UTC).date()
    paid_at = dt.datetime.combine(today - dt.timedelta(days=1), dt.time(12), dt.UTC)
    with psycopg.connect(database_url) as conn:
        paid(conn, 1, paid_at, 500, "USD")
        conn.execute(
            "WITH slot AS (INSERT INTO ad_slots (bot_id, kind, title, price_micros, accepts_trx)"
            "   SELECT id, 'pinned_post', 'Pinned', 10000000, true FROM bots RETURNING id),"
            " person AS (INSERT INTO people (telegram_user_id) VALUES (901) RETURNING id),"
            " ordered AS (INSERT INTO ad_orders (slot_id, person_id, ad, price_micros,"
            "   accepts_usdt, accepts_trx, status, approved_at, pay_to, trx_rate, paid_micros)"
            "   SELECT slot.id, person.id, '{}', 10000000, true, true, 'paid', now(),"
            "    'TV1KhjB8LLx2mE4BDED5WfWMnwpzmj2rzQ', 0.25, 10000000 FROM slot, person"
            "   RETURNING id),"
            " claims AS (INSERT INTO tron_claims (tx_hash, order_id, state)"
            "   SELECT repeat(n::text, 64), ordered.id, 'credited'"
            "     FROM ordered, generate_series(1, 3) n RETURNING id, order_id, tx_hash)"
            " INSERT INTO ad_credits (claim_id, order_id, coin, amount, micros, sender, block_time)"
            " SELECT id, order_id, CASE tx_hash WHEN repeat('1', 64) THEN 'trx' ELSE 'usdt' END,"
            "   CASE tx_hash WHEN repeat('1', 64) THEN 16000000 ELSE 3000000 END,"
            "   CASE tx_hash WHEN repeat('1', 64) THEN 4000000 ELSE 3000000 END,"
            "   'TD5gsCwxykWsLN9aPrq2TAfNjByuZKYp4E', %(at)s FROM claims",
            {"at": paid_at},
        )
    figures = HTTP.get(
        f"{url}/v1/dashboard", headers={"Authorization": f"Bearer {tokens['viewer']}"}
    ).json()
    day = str(today - dt.timedelta(days=1))
    assert figures["revenue"] == [
        {"day": day, "currency": "TRX", "amount_minor": "16000000", "amount": "16"},
        {"day": day, "currency": "USD", "amount_minor": "500", "amount": "5.00"},
        {"day": day, "currency": "USDT", "amount_minor": "6000000", "amount": "6"},
    ]
    # TRX and USDT summed exactly, in their 6 places.
    assert [(t["currency"], t["amount"]) for t in figures["revenue_totals"]] == [
        ("TRX", "16"),
        ("USD", "5.00"),
        ("USDT", "6"),
    ]


def test_dashboard__a_bot_telegram_is_failing_for_is_named_with_since_when(
    board: tuple[str, dict[str, str]], database_url: str
) -> None:
    url, tokens = board
    viewer = {"Authorization": f"Bearer {tokens['viewer']}"}
    assert HTTP.get(f"{url}/v1/dashboard", headers=viewer).json()["outages"] == []
    since = dt.datetime(2026, 12, 3, 6, 30, tzinfo=dt.UTC)
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "UPDATE bots SET telegram_failing_since = %s RETURNING id, username", (since,)
        ).fetchone()
    assert row is not None
    outages = HTTP.get(f"{url}/v1/dashboard", headers=viewer).json()["outages"]
    assert outages == [{"bot_id": row[0], "username": row[1], "since": "2026-12-03T06:30:00Z"}]
    # It counts among the bots with a problem.
    assert HTTP.get(f"{url}/v1/dashboard", headers=viewer).json()["bots_with_problems"] == 1
