"""Every list sorts by each field its contract offers, either way, and its cursor walks that
order: page after page gives the same items as one long page, none skipped or repeated where
equal values span pages."""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import psycopg
import pytest

from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot
from tests.conftest import HTTP, TEST_BCRYPT_ROUNDS, panel_settings
from tests.panel_api.e2e.conftest import PASSWORD, owner_and_viewer
from tests.panel_api.history import seed_history


class Lists:
    def __init__(self, url: str, token: str, database_url: str, channel: int) -> None:
        self.url = url
        self.headers = {"Authorization": f"Bearer {token}"}
        self.database_url = database_url
        self.channel = channel

    def get(self, path: str, **params: Any) -> httpx.Response:
        return HTTP.get(f"{self.url}{path}", params=params, headers=self.headers, timeout=30)

    def post(self, path: str, body: Any) -> None:
        answer = HTTP.post(f"{self.url}{path}", json=body, headers=self.headers, timeout=30)
        assert answer.status_code in (200, 201), answer.text


@pytest.fixture
def lists(database_url: str) -> Iterator[Lists]:
    """The demo's month of history, and at least four items in every list."""
    bot, _, _ = insert_bot(database_url)
    for n in range(3):
        insert_bot(database_url, telegram_bot_id=5550100 + n)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    assert seed_history(database_url) is True
    with psycopg.connect(database_url) as conn:
        channel = conn.execute("SELECT id FROM channels WHERE is_paid").fetchone()
        assert channel is not None
        conn.execute(
            "INSERT INTO channels (telegram_chat_id, title)"
            " SELECT -100900 - n, 'ch ' || (n % 2) FROM generate_series(1, 4) n"
        )
        # Plans with ties in name and place, one in each new channel.
        conn.execute(
            "INSERT INTO plans (channel_id, name, price_minor, currency, period_days,"
            " grace_days, position) SELECT id, 'plan ' || (id % 2), 100, 'USD', 30, 0, id % 2"
            " FROM channels WHERE telegram_chat_id BETWEEN -100904 AND -100901"
        )
        # Coupons with ties in their uses (2, 1, 1, 0), each use an invoice of the paid plan.
        conn.execute(
            "INSERT INTO coupons (code, percent_off, created_at)"
            " SELECT 'CODE' || n, 10, now() - n * interval '1 hour' FROM generate_series(1, 4) n"
        )
        conn.execute(
            "WITH p AS (INSERT INTO people (telegram_user_id) SELECT 7200000 + n"
            " FROM generate_series(1, 4) n RETURNING id, telegram_user_id - 7200000 AS n),"
            " c AS (SELECT id, substr(code, 5)::integer AS n FROM coupons),"
            " pl AS (SELECT id, channel_id FROM plans WHERE is_default AND channel_id = %s),"
            " i AS (INSERT INTO invoices (order_reference, person_id, channel_id, plan_id,"
            " amount_minor, list_price_minor, discount_minor, coupon_id, currency, period_days,"
            " grace_days, gateway, expires_at)"
            " SELECT 'gh_sort' || p.n, p.id, pl.channel_id, pl.id, 90, 100, 10, c.id, 'USD', 30,"
            " 3, 'subgate', now() + interval '1 day' FROM p, pl, c"
            " WHERE (c.n, p.n) IN ((1, 1), (1, 2), (2, 3), (3, 4))"
            " RETURNING id, person_id, coupon_id)"
            " INSERT INTO coupon_redemptions (coupon_id, person_id, invoice_id, seq, redeemed_at)"
            " SELECT coupon_id, person_id, id, 1, date_trunc('hour', now()) FROM i",
            (channel[0],),
        )
        # Access codes with ties in their uses (2, 1, 1, 0), by the people above.
        conn.execute(
            "WITH a AS (INSERT INTO access_codes (code, channel_id, days, max_uses, created_at)"
            " SELECT 'SORTCODEAA' || chr(65 + n), %s, 7, 5, now() - n * interval '1 hour'"
            " FROM generate_series(1, 4) n RETURNING id, ascii(right(code, 1)) - 65 AS n),"
            " p AS (SELECT id, telegram_user_id - 7200000 AS n FROM people"
            " WHERE telegram_user_id BETWEEN 7200001 AND 7200004)"
            " INSERT INTO access_code_uses (code_id, person_id, used_at)"
            " SELECT a.id, p.id, date_trunc('hour', now()) FROM a, p"
            " WHERE (a.n, p.n) IN ((1, 1), (1, 2), (2, 3), (3, 4))",
            (channel[0],),
        )
        conn.execute(
            "INSERT INTO contents (bot_id, code, kind, body)"
            " SELECT %s, 'code' || (n %% 3) || '_' || n, 'text', 'hi' FROM generate_series(1, 5) n",
            (bot,),
        )
        conn.execute(
            "INSERT INTO gateway_events (gateway, event_type, outcome, detail, payload,"
            " received_at) SELECT CASE WHEN n % 2 = 0 THEN 'stripe' ELSE 'subgate' END,"
            " 'payment', 'orphan', 'no such order', '{}', now() - n * interval '1 hour'"
            " FROM generate_series(1, 4) n"
        )
        conn.execute(
            "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload, state, attempt,"
            " last_error) SELECT %s, 100 + n, 7000100 + n, 'message', '{}', 'dead', n %% 2 + 4,"
            " 'failed' FROM generate_series(1, 4) n",
            (bot,),
        )
        # Campaigns with ties in their counts: 2, 1, 1 and 0 joins, one of them left.
        conn.execute(
            "WITH c AS (INSERT INTO campaigns (name, bot_id, channel_id, invite_link, created_at)"
            " SELECT 'campaign ' || n, %s, %s, 'https://t.me/+sort' || n,"
            " now() - n * interval '1 hour' FROM generate_series(1, 4) n RETURNING id),"
            " p AS (INSERT INTO people (telegram_user_id, first_name)"
            " SELECT 7100000 + n, 'J' FROM generate_series(1, 4) n RETURNING id)"
            " INSERT INTO campaign_joins (campaign_id, person_id, joined_at, left_at)"
            " SELECT c.id, p.id, now(), CASE WHEN c.id = p.id THEN now() END FROM"
            " (SELECT id, row_number() OVER (ORDER BY id) r FROM c) c JOIN"
            " (SELECT id, row_number() OVER (ORDER BY id) r FROM p) p"
            " ON (c.r, p.r) IN ((1, 1), (1, 2), (2, 3), (3, 4))",
            (bot, channel[0]),
        )
        # Broadcasts, two made at the same moment.
        conn.execute(
            "INSERT INTO broadcasts (bot_id, text, created_at)"
            " SELECT %s, 'news ' || n, date_trunc('hour', now()) - (n / 2) * interval '1 hour'"
            " FROM generate_series(1, 4) n",
            (bot,),
        )
    with serve_in_thread(create_app(panel_settings(database_url))) as url:
        tokens = owner_and_viewer(url)
        rig = Lists(url, tokens["owner"], database_url, channel[0])
        for n in range(3):
            rig.post(
                "/v1/team", {"email": f"m{n}@example.com", "role": "editor", "password": "x" * 12}
            )
            rig.post(
                "/v1/ad-slots",
                {"bot_id": bot, "kind": "button", "title": f"slot {n % 2}", "price": f"{n + 1}0"},
            )
        rig.post(
            f"/v1/channels/{rig.channel}/import",
            {"ids": [9005, 9001, 9004, 9002, 9003], "action": "whitelist"},
        )
        yield rig


def _sorted_paths(url: str) -> dict[str, list[str]]:
    document = HTTP.get(f"{url}/openapi.json").json()
    found = {}
    for path, operations in document["paths"].items():
        parameters = {p["name"]: p for p in operations.get("get", {}).get("parameters", [])}
        # The lists read page by page (an export takes a sort too, and writes every row).
        if "sort" in parameters and "cursor" in parameters:
            found[path] = parameters["sort"]["schema"]["enum"]
    return found


def _comparable(field: str, values: list[Any]) -> list[Any]:
    if field == "at" or field.endswith("_at"):
        return [dt.datetime.fromisoformat(v) for v in values]
    if field.endswith("_minor"):
        return [Decimal(v) for v in values]
    return values


def _in_order(conn: psycopg.Connection, field: str, values: list[Any], descending: bool) -> bool:
    if (
        values
        and isinstance(values[0], str)
        and not (field == "at" or field.endswith(("_at", "_minor")))
    ):
        # Text orders by the database's collation: ask it.
        row = conn.execute(
            "SELECT array_agg(v ORDER BY v) FROM unnest(%s::text[]) v", (values,)
        ).fetchone()
        expected = list(row[0]) if row else []
    else:
        expected = sorted(_comparable(field, values))
        values = _comparable(field, values)
    return values == (expected[::-1] if descending else expected)


@pytest.mark.slow(12)
def test_every_list__each_sort_either_way_walked_by_its_cursor(lists: Lists) -> None:
    paths = _sorted_paths(lists.url)
    assert len(paths) == 22
    walked = 0
    with psycopg.connect(lists.database_url) as conn:
        for template, sorts in paths.items():
            path = template.replace("{channel_id}", str(lists.channel))
            for sort in sorts:
                whole = lists.get(path, sort=sort, limit=200)
                assert whole.status_code == 200, (path, sort, whole.text)
                items = whole.json()["items"]
                assert len(items) >= 4 and whole.json()["next_cursor"] is None, (path, sort)
                field = sort.lstrip("-")
                values = [item[field] for item in items]
                assert _in_order(conn, field, values, sort.startswith("-")), (path, sort, values)
                pages, cursor = [], None
                while True:
                    params: dict[str, Any] = {"sort": sort, "limit": 3}
                    if cursor:
                        params["cursor"] = cursor
                    answer = lists.get(path, **params).json()
                    pages.extend(answer["items"])
                    cursor = answer["next_cursor"]
                    if cursor is None:
                        break
                assert pages == items, (path, sort)
                walked += 1
    assert walked == sum(len(sorts) for sorts in paths.values())


def test_sorts__ties_span_pages_and_each_keeps_its_place(lists: Lists) -> None:
    """Memberships by status: many share each status, so pages of 3 cut through ties."""
    whole = lists.get("/v1/memberships", sort="status", limit=200).json()["items"]
    statuses = [m["status"] for m in whole]
    assert statuses.count("active") > 3 and statuses.count("expired") > 3
    first = lists.get("/v1/memberships", sort="status", limit=2).json()
    second = lists.get("/v1/memberships", sort="status", limit=2, cursor=first["next_cursor"])
    assert first["items"][-1]["status"] == second.json()["items"][0]["status"] == statuses[0]
    assert first["items"] + second.json()["items"] == whole[:4]


def _cursor(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


FORGED: list[tuple[str, dict[str, Any], str]] = [
    ("/v1/payments", {"sort": "flag"}, "sort"),
    ("/v1/payments", {"sort": "--paid_at"}, "sort"),
    (
        "/v1/payments",
        {"sort": "-paid_at", "cursor": _cursor({"s": "paid_at", "v": [1, 1]})},
        "belongs to sort",
    ),
    (
        "/v1/payments",
        {"sort": "-paid_at", "cursor": _cursor({"s": "-paid_at", "v": ["yesterday", 1]})},
        "cursor",
    ),
    (
        "/v1/payments",
        {"sort": "-paid_at", "cursor": _cursor({"s": "-paid_at", "v": ["2026-01-01T00:00:00", 1]})},
        "cursor",
    ),
    (
        "/v1/payments",
        {"sort": "amount_minor", "cursor": _cursor({"s": "amount_minor", "v": ["1e99999", 1]})},
        "cursor",
    ),
    (
        "/v1/payments",
        {"sort": "amount_minor", "cursor": _cursor({"s": "amount_minor", "v": [5, 1]})},
        "cursor",
    ),
    ("/v1/payments", {"sort": "id", "cursor": _cursor({"s": "id", "v": [2**70]})}, "cursor"),
    ("/v1/payments", {"sort": "id", "cursor": _cursor({"s": "id", "v": [True]})}, "cursor"),
    ("/v1/payments", {"sort": "id", "cursor": _cursor({"s": "id", "v": [1, 2]})}, "cursor"),
    (
        "/v1/payments",
        {"sort": "gateway", "cursor": _cursor({"s": "gateway", "v": ["a\u0000", 1]})},
        "cursor",
    ),
    (
        "/v1/payments",
        {"sort": "gateway", "cursor": _cursor({"s": "gateway", "v": ["\ud800", 1]})},
        "cursor",
    ),
    (
        "/v1/people",
        {"sort": "bot_id", "cursor": _cursor({"s": "bot_id", "v": [1, 1, 1]})},
        "cursor",
    ),
    ("/v1/team", {"cursor": _cursor({"p": 3})}, "cursor"),
    ("/v1/team", {"cursor": _cursor([1, 2])}, "cursor"),
]


def test_sorts__an_unknown_sort_or_a_forged_cursor_gets_422_at_its_parameter(lists: Lists) -> None:
    for path, params, detail in FORGED:
        answer = lists.get(path, **params)
        assert answer.status_code == 422, (params, answer.text)
        assert answer.headers["content-type"] == "application/problem+json"
        assert detail in answer.json()["detail"], (params, answer.json())
        if "cursor" in params:
            assert answer.json()["errors"] == [{"field": "cursor", "code": "bad-format"}]


def test_lists__null_for_a_number_filter_is_422_at_it_and_a_text_filter_searches_it(
    lists: Lists,
) -> None:
    refused = lists.get("/v1/memberships", channel="null")
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"] == [{"field": "channel", "code": "bad-format"}]
    assert lists.get("/v1/people", q="null").status_code == 200
