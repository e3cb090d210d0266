"""The ad shop through the panel: the shop's address, slots priced in USDT, orders approved
through billing with its answers relayed."""

from __future__ import annotations

import psycopg

from tests.panel_api.e2e.conftest import SHOP, Panel


def test_shop_address__checksum_checked(panel: Panel) -> None:
    broken = SHOP[:-1] + ("A" if SHOP[-1] != "A" else "B")
    for bad in (broken, "T123", "not an address"):
        assert panel.call("PATCH", "/v1/workspace", {"tron_address": bad}).status_code == 422
    done = panel.call("PATCH", "/v1/workspace", {"tron_address": SHOP})
    assert (done.status_code, done.json()["tron_address"]) == (200, SHOP)


def test_slots__priced_exactly_and_deactivated(panel: Panel) -> None:
    slot = {"bot_id": panel.bot, "kind": "pinned_post", "title": "Pinned a day", "price": "12.5"}
    made = panel.call("POST", "/v1/ad-slots", slot)
    assert made.status_code == 201, made.text
    assert (made.json()["price_micros"], made.json()["price"]) == (12_500_000, "12.5")
    for price in ("1.1234567", "0", "-1", "1e3", "12,5", " 12"):
        assert panel.call("POST", "/v1/ad-slots", {**slot, "price": price}).status_code == 422
    no_coin = {**slot, "accepts_usdt": False, "accepts_trx": False}
    assert panel.call("POST", "/v1/ad-slots", no_coin).status_code == 422
    off = panel.call("PATCH", f"/v1/ad-slots/{made.json()['id']}", {"active": False})
    assert (off.status_code, off.json()["active"]) == (200, False)
    assert panel.call("PATCH", "/v1/ad-slots/999", {"active": False}).status_code == 404


def order(panel: Panel, slot: int) -> int:
    with psycopg.connect(panel.database_url) as conn:
        person = conn.execute(
            "INSERT INTO people (telegram_user_id) VALUES (77) ON CONFLICT (telegram_user_id)"
            " DO UPDATE SET updated_at = now() RETURNING id"
        ).fetchone()
        assert person is not None
        row = conn.execute(
            "INSERT INTO ad_orders (slot_id, person_id, ad, price_micros, accepts_usdt,"
            ' accepts_trx) VALUES (%s, %s, \'{"text": "Buy"}\', 12500000, true, true)'
            " RETURNING id",
            (slot, person[0]),
        ).fetchone()
        assert row is not None
        return int(row[0])


def test_orders__approved_through_billing_and_its_answers_relayed(panel: Panel) -> None:
    slot = panel.call(
        "POST",
        "/v1/ad-slots",
        {
            "bot_id": panel.bot,
            "kind": "broadcast",
            "title": "Blast",
            "price": "12.5",
            "accepts_trx": True,
        },
    ).json()["id"]
    first, second = order(panel, slot), order(panel, slot)
    # No shop address yet: billing's 422 comes back unchanged.
    early = panel.call("POST", f"/v1/ad-orders/{first}/approve")
    assert (early.status_code, early.json()["type"]) == (422, "/problems/invalid-values")
    panel.call("PATCH", "/v1/workspace", {"tron_address": SHOP})
    assert panel.call("POST", f"/v1/ad-orders/{first}/approve", role="viewer").status_code == 403
    approved = panel.call("POST", f"/v1/ad-orders/{first}/approve")
    assert approved.status_code == 200, approved.text
    assert (approved.json()["status"], approved.json()["pay_to"]) == ("approved", SHOP)
    again = panel.call("POST", f"/v1/ad-orders/{first}/approve")
    assert (again.status_code, again.json()["type"]) == (409, "/problems/conflict")
    assert panel.call("POST", f"/v1/ad-orders/{second}/reject").json()["status"] == "rejected"
    assert panel.call("POST", "/v1/ad-orders/99999/cancel").status_code == 404
    listed = panel.call("GET", "/v1/ad-orders?status=approved").json()["items"]
    assert [o["id"] for o in listed] == [first]
    # The advertiser as the bot last heard of them: here an id with no name yet.
    assert listed[0]["person"] == {"username": None, "first_name": "", "last_name": None}
    detail = panel.call("GET", f"/v1/ad-orders/{first}").json()
    assert (detail["order"]["trx_rate_source"], [e["kind"] for e in detail["events"]]) == (
        "coingecko",
        ["approved"],
    )
    actions = [e["action"] for e in panel.call("GET", "/v1/audit").json()["items"]]
    assert "ad_orders.approve" in actions and "ad_orders.reject" in actions
