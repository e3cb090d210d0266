"""Plans through the panel: added, changed, taken off sale and made the default by an admin,
every write audited; refusals named at their fields; and the bot's offer (billing) follows."""

from __future__ import annotations

from typing import Any

from tests.conftest import HTTP, SECRETS
from tests.panel_api.e2e.conftest import Panel


def paid_channel(panel: Panel, chat_id: int, title: str) -> int:
    [(channel,)] = panel.query(
        "INSERT INTO channels (telegram_chat_id, title, is_paid) VALUES (%s, %s, true)"
        " RETURNING id",
        chat_id,
        title,
    )
    return int(channel)


def add(panel: Panel, **plan: Any) -> dict[str, Any]:
    made = panel.call("POST", "/v1/plans", plan)
    assert made.status_code == 201, made.text
    return dict(made.json())


def offered(panel: Panel, channel: int) -> list[tuple[str, str, list[str]]]:
    """The plans the bot is offered for the channel, as botedge asks billing for them."""
    answer = HTTP.get(
        f"{panel.billing_url}/internal/gateways",
        params={"channel_id": channel},
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
    ).json()
    return [(p["name"], p["amount"], p["gateways"]) for p in answer["offer"]["plans"]]


def test_plans__added_in_order_the_first_is_the_default_and_each_write_is_audited(
    panel: Panel,
) -> None:
    club = paid_channel(panel, -1001000000901, "Club")
    month = add(panel, channel_id=club, name="Month", price="5", currency="USD", period_days=30)
    year = add(
        panel,
        channel_id=club,
        name="Year",
        price="50.00",
        currency="USD",
        period_days=365,
        grace_days=7,
        gateways=["subgate", "stripe"],
        position=2,
    )
    assert (month["is_default"], month["price"], month["gateways"]) == (True, "5.00", None)
    assert (year["is_default"], year["gateways"], year["price_minor"]) == (
        False,
        ["stripe", "subgate"],
        5000,
    )
    listed = panel.call("GET", f"/v1/plans?channel={club}", role="viewer").json()["items"]
    assert [p["name"] for p in listed] == ["Month", "Year"]
    assert listed[0]["channel_title"] == "Club"

    # Year becomes the default; Month stays on sale, and then is taken off it.
    made_default = panel.call("PATCH", f"/v1/plans/{year['id']}", {"is_default": True})
    assert made_default.json()["is_default"] is True
    off = panel.call("PATCH", f"/v1/plans/{month['id']}", {"active": False})
    assert (off.status_code, off.json()["active"], off.json()["is_default"]) == (200, False, False)
    # The default stays on sale.
    kept = panel.call("PATCH", f"/v1/plans/{year['id']}", {"active": False})
    assert (kept.status_code, kept.json()["type"]) == (409, "/problems/conflict")
    on_sale = panel.call("GET", f"/v1/plans?channel={club}&active=true").json()["items"]
    assert [p["name"] for p in on_sale] == ["Year"]
    # A new price for Year: invoices made from now on.
    repriced = panel.call(
        "PATCH", f"/v1/plans/{year['id']}", {"price": "45", "gateways": None, "position": 0}
    )
    assert (repriced.json()["price"], repriced.json()["gateways"]) == ("45.00", None)

    audited = panel.query(
        "SELECT action, target FROM audit_log WHERE action LIKE 'plans.%%' ORDER BY id"
    )
    assert audited == [
        ("plans.add", f"plan:{month['id']}"),
        ("plans.add", f"plan:{year['id']}"),
        ("plans.update", f"plan:{year['id']}"),
        ("plans.update", f"plan:{month['id']}"),
        ("plans.update", f"plan:{year['id']}"),
    ]
    # A viewer reads plans but changes none.
    refused = panel.call("PATCH", f"/v1/plans/{year['id']}", {"name": "Mine"}, role="viewer")
    assert refused.status_code == 403


def test_plans__the_bot_is_offered_what_the_panel_set(panel: Panel) -> None:
    club = paid_channel(panel, -1001000000901, "Club")
    add(panel, channel_id=club, name="Month", price="5", currency="USD", period_days=30)
    year = add(
        panel,
        channel_id=club,
        name="Year",
        price="50",
        currency="USD",
        period_days=365,
        gateways=["subgate"],
    )
    # Telegram Stars sell plans in XTR only.
    gateways = panel.call("GET", "/v1/gateways").json()["gateways"]
    every = sorted(g for g in gateways if g != "telegram_stars")
    quarter = add(
        panel, channel_id=club, name="Quarter", price="14", currency="USD", period_days=90
    )
    assert panel.call("PATCH", f"/v1/plans/{quarter['id']}", {"position": 1}).status_code == 200
    assert panel.call("PATCH", f"/v1/plans/{year['id']}", {"position": 2}).status_code == 200
    assert offered(panel, club) == [
        ("Month", "5.00", every),
        ("Quarter", "14.00", every),
        ("Year", "50.00", ["subgate"]),
    ]
    panel.call("PATCH", f"/v1/plans/{quarter['id']}", {"active": False})
    panel.call("PATCH", f"/v1/plans/{year['id']}", {"name": "Yearly", "price": "40"})
    assert offered(panel, club) == [("Month", "5.00", every), ("Yearly", "40.00", ["subgate"])]


def test_plans__refusals_at_their_fields_and_nothing_written(panel: Panel) -> None:
    club = paid_channel(panel, -1001000000901, "Club")
    add(panel, channel_id=club, name="Month", price="5", currency="USD", period_days=30)
    base = {"channel_id": club, "name": "Year", "price": "50", "currency": "USD", "period_days": 1}
    for change, field, code in (
        ({"name": "month"}, "name", "taken"),
        ({"name": "  "}, "name", "required"),
        ({"price": "0"}, "price", "out-of-range"),
        ({"price": "5.5", "currency": "JPY"}, "price", "too-precise"),
        ({"currency": "ABC"}, "currency", "not-one-of"),
        ({"period_days": 0}, "period_days", "out-of-range"),
        ({"gateways": ["subgate", "subgate"]}, "gateways", "duplicate"),
        ({"gateways": []}, "gateways", "too-short"),
        ({"gateways": ["Sub Gate"]}, "gateways[0]", "bad-format"),
        ({"position": 1000}, "position", "out-of-range"),
        ({"channel_id": 99999}, "channel_id", "not-found"),
    ):
        refused = panel.call("POST", "/v1/plans", {**base, **change})
        assert refused.status_code == 422, (change, refused.text)
        assert refused.json()["errors"] == [{"field": field, "code": code}], change
    assert panel.query("SELECT count(*) FROM plans WHERE channel_id = %s", club) == [(1,)]
    assert panel.call("PATCH", "/v1/plans/99999", {"name": "x"}).status_code == 404
    assert panel.call("GET", "/v1/plans/99999").status_code == 404


def test_plans__a_free_trial_one_on_sale_per_channel_free_and_never_the_default(
    panel: Panel,
) -> None:
    club = paid_channel(panel, -1001000000901, "Club")
    add(panel, channel_id=club, name="Month", price="5", currency="EUR", period_days=30)
    trial = add(panel, channel_id=club, name="Free week", kind="trial", period_days=7)
    assert (trial["kind"], trial["price_minor"], trial["currency"], trial["is_default"]) == (
        "trial",
        0,
        "EUR",
        False,
    )
    assert trial["taken"] == 0
    base = {"channel_id": club, "name": "Another", "kind": "trial", "period_days": 3}
    for change, field, code in (
        ({}, "kind", "taken"),
        ({"price": "1"}, "price", "invalid"),
        ({"gateways": ["subgate"]}, "gateways", "invalid"),
        ({"kind": "regular"}, "price", "required"),
        ({"kind": "regular", "price": "1"}, "currency", "required"),
    ):
        refused = panel.call("POST", "/v1/plans", {**base, **change})
        assert refused.status_code == 422, (change, refused.text)
        assert refused.json()["errors"] == [{"field": field, "code": code}], change
    made_default = panel.call("PATCH", f"/v1/plans/{trial['id']}", {"is_default": True})
    assert made_default.json()["errors"] == [{"field": "is_default", "code": "invalid"}]
    longer = panel.call("PATCH", f"/v1/plans/{trial['id']}", {"period_days": 14})
    assert longer.json()["period_days"] == 14
    assert panel.query("SELECT count(*) FROM plans WHERE channel_id = %s", club) == [(2,)]
    assert [
        a
        for a, *_ in panel.query(
            "SELECT action FROM audit_log WHERE action LIKE %s ORDER BY id", "plans.%%"
        )
    ] == [
        "plans.add",
        "plans.add",
        "plans.update",
    ]
    # The bot is offered the trial after the month, with no gateway.
    answer = HTTP.get(
        f"{panel.billing_url}/internal/gateways",
        params={"channel_id": club},
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
    ).json()
    assert [(p["name"], p["kind"], p["gateways"]) for p in answer["offer"]["plans"]][1] == (
        "Free week",
        "trial",
        [],
    )


def test_plans__a_bundle_of_paid_channels_in_one_currency_offered_in_each(
    panel: Panel,
) -> None:
    news = paid_channel(panel, -1001000000901, "News")
    deals = paid_channel(panel, -1001000000902, "Deals")
    euro = paid_channel(panel, -1001000000903, "Euro")
    free = panel.query(
        "INSERT INTO channels (telegram_chat_id, title) VALUES (-1001000000904, 'Free')"
        " RETURNING id"
    )[0][0]
    for channel, currency in ((news, "USD"), (deals, "USD"), (euro, "EUR")):
        add(panel, channel_id=channel, name="Month", price="5", currency=currency)
    base = {"channel_id": news, "name": "Both", "kind": "bundle", "price": "8", "currency": "USD"}

    for change, field, code in (
        ({}, "channels", "required"),
        ({"channels": [news]}, "channels", "too-short"),
        ({"channels": [deals, euro]}, "channels", "mixed-currency"),
        ({"channels": [deals, free]}, "channels", "invalid"),
        ({"channels": [99999]}, "channels", "not-found"),
        ({"kind": "regular", "channels": [deals]}, "channels", "invalid"),
    ):
        refused = panel.call("POST", "/v1/plans", {**base, **change})
        assert refused.status_code == 422, (change, refused.text)
        assert refused.json()["errors"] == [{"field": field, "code": code}], change
    assert panel.query("SELECT count(*) FROM plan_channels") == [(0,)]

    both = add(panel, **base, channels=[deals])
    assert (both["kind"], both["channels"], both["channel_titles"], both["is_default"]) == (
        "bundle",
        [news, deals],
        ["News", "Deals"],
        False,
    )
    # Listed under either channel; offered in each, and in no other.
    listed = panel.call("GET", f"/v1/plans?channel={deals}", role="viewer").json()["items"]
    assert sorted(p["name"] for p in listed) == ["Both", "Month"]
    assert offered(panel, deals)[1] == ("Both", "8.00", offered(panel, deals)[0][2])
    assert [name for name, *_ in offered(panel, euro)] == ["Month"]

    made_default = panel.call("PATCH", f"/v1/plans/{both['id']}", {"is_default": True})
    assert made_default.json()["errors"] == [{"field": "is_default", "code": "invalid"}]
    mixed = panel.call("PATCH", f"/v1/plans/{both['id']}", {"channels": [euro]})
    assert mixed.json()["errors"] == [{"field": "channels", "code": "mixed-currency"}]
    third = paid_channel(panel, -1001000000905, "Third")
    add(panel, channel_id=third, name="Month", price="5", currency="USD")
    moved = panel.call("PATCH", f"/v1/plans/{both['id']}", {"channels": [third]})
    assert moved.status_code == 200, moved.text
    assert moved.json()["channels"] == [news, third]
    assert [name for name, *_ in offered(panel, deals)] == ["Month"]
    assert [name for name, *_ in offered(panel, third)] == ["Both", "Month"]
    audited = panel.query(
        "SELECT after->'channels' FROM audit_log WHERE target = %s ORDER BY id",
        f"plan:{both['id']}",
    )
    assert audited == [([news, deals],), ([news, third],)]
