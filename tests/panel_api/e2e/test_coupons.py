"""Coupons through the panel: added and switched off by an admin, every write audited,
refusals at their fields; each use listed and exported once billing redeems one."""

from __future__ import annotations

import csv
import datetime as dt
import io
from typing import Any

from tests.conftest import HTTP, SECRETS
from tests.panel_api.e2e.conftest import Panel


def paid_plan(panel: Panel, currency: str = "USD") -> tuple[int, int]:
    [(channel,)] = panel.query(
        "INSERT INTO channels (telegram_chat_id, title, is_paid) VALUES (-1001000000931,"
        " 'Club', true) RETURNING id"
    )
    made = panel.call(
        "POST",
        "/v1/plans",
        {
            "channel_id": channel,
            "name": "Year",
            "price": "50",
            "currency": currency,
            "period_days": 365,
        },
    )
    assert made.status_code == 201, made.text
    return int(channel), int(made.json()["id"])


def redeem(panel: Panel, channel: int, plan: int, user: int, coupon: str) -> Any:
    return HTTP.post(
        f"{panel.billing_url}/internal/invoices",
        json={
            "telegram_user_id": user,
            "channel_id": channel,
            "gateway": "subgate",
            "plan_id": plan,
            "coupon": coupon,
        },
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
    )


def test_coupons__added_used_listed_exported_and_switched_off(panel: Panel) -> None:
    channel, plan = paid_plan(panel)
    made = panel.call(
        "POST",
        "/v1/coupons",
        {"code": "Year-20", "percent_off": 20, "plan_ids": [plan], "max_redemptions": 10},
    )
    assert made.status_code == 201, made.text
    coupon = made.json()
    assert (coupon["uses"], coupon["per_person"], coupon["customers"]) == (0, 1, "any")
    fixed = panel.call(
        "POST", "/v1/coupons", {"code": "FIVE", "amount_off": "5", "currency": "USD"}
    ).json()
    assert (fixed["amount_off_minor"], fixed["amount_off"]) == (500, "5.00")

    assert redeem(panel, channel, plan, 42, "year-20").json()["amount"] == "40.00"
    assert redeem(panel, channel, plan, 43, "YEAR-20").status_code == 201
    listed = panel.call("GET", "/v1/coupons?sort=code", role="viewer").json()["items"]
    assert [(c["code"], c["uses"], c["paid"]) for c in listed] == [
        ("FIVE", 0, 0),
        ("Year-20", 2, 0),
    ]
    uses = panel.call("GET", f"/v1/coupon-redemptions?coupon={coupon['id']}").json()["items"]
    assert [(u["telegram_user_id"], u["list_price"], u["discount"], u["amount"]) for u in uses] == [
        (43, "50.00", "10.00", "40.00"),
        (42, "50.00", "10.00", "40.00"),
    ]
    assert uses[0]["plan_name"] == "Year" and uses[0]["invoice_status"] == "open"
    exported = panel.call("GET", f"/v1/exports/coupon-redemptions.csv?coupon={coupon['id']}")
    assert exported.status_code == 200
    table = list(csv.DictReader(io.StringIO(exported.text.lstrip("\ufeff"))))
    assert [(r["coupon_code"], r["telegram_user_id"], r["discount"]) for r in table] == [
        ("Year-20", "43", "10.00"),
        ("Year-20", "42", "10.00"),
    ]
    assert panel.call("GET", "/v1/exports/coupon-redemptions.csv", role="viewer").status_code == 403

    off = panel.call("PATCH", f"/v1/coupons/{coupon['id']}", {"active": False})
    assert (off.status_code, off.json()["active"]) == (200, False)
    refused = redeem(panel, channel, plan, 44, "YEAR-20")
    assert refused.json()["errors"] == [{"field": "coupon", "code": "not-found"}]
    assert panel.query(
        "SELECT action FROM audit_log WHERE action LIKE 'coupons.%%' ORDER BY id"
    ) == [("coupons.add",), ("coupons.add",), ("coupons.update",)]
    assert (
        panel.call(
            "PATCH", f"/v1/coupons/{coupon['id']}", {"active": True}, role="viewer"
        ).status_code
        == 403
    )


def test_coupons__refusals_at_their_fields_and_nothing_written(panel: Panel) -> None:
    _, plan = paid_plan(panel, currency="EUR")
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)).isoformat()
    panel.call("POST", "/v1/coupons", {"code": "TAKEN", "percent_off": 5})
    for body, field, code in (
        ({"code": "taken", "percent_off": 5}, "code", "taken"),
        ({"code": "a b", "percent_off": 5}, "code", "bad-format"),
        ({"code": "PZERO", "percent_off": 0}, "percent_off", "out-of-range"),
        ({"code": "P101", "percent_off": 101}, "percent_off", "out-of-range"),
        ({"code": "NONE"}, "percent_off", "required"),
        (
            {"code": "BOTH", "percent_off": 5, "amount_off": "1", "currency": "USD"},
            "percent_off",
            "invalid",
        ),
        ({"code": "NOCUR", "amount_off": "1"}, "currency", "required"),
        ({"code": "YEN", "amount_off": "1.5", "currency": "JPY"}, "amount_off", "too-precise"),
        (
            {"code": "USD", "amount_off": "1", "currency": "USD", "plan_ids": [plan]},
            "currency",
            "not-one-of",
        ),
        ({"code": "GONE", "percent_off": 5, "plan_ids": [99999]}, "plan_ids", "not-found"),
        ({"code": "TWICE", "percent_off": 5, "plan_ids": [plan, plan]}, "plan_ids", "duplicate"),
        ({"code": "WHO", "percent_off": 5, "customers": "friends"}, "customers", "not-one-of"),
        # As access codes: an expiry already past would make a coupon no one can use.
        ({"code": "OLD", "percent_off": 5, "expires_at": past}, "expires_at", "out-of-range"),
    ):
        refused = panel.call("POST", "/v1/coupons", body)
        assert refused.status_code == 422, (body, refused.text)
        assert refused.json()["errors"] == [{"field": field, "code": code}], body
    assert panel.query("SELECT code FROM coupons") == [("TAKEN",)]
    assert panel.call("PATCH", "/v1/coupons/99999", {"active": False}).status_code == 404
