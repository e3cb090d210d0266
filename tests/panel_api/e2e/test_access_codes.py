"""Access codes through the panel: made by an admin for a paid channel (unguessable, with the
bot's start link), changed and switched off, every write audited; their uses listed and
exported once billing redeems them."""

from __future__ import annotations

import re

from tests.conftest import HTTP, SECRETS
from tests.panel_api.e2e.conftest import Panel
from tests.panel_api.e2e.test_plans import paid_channel


def redeem(panel: Panel, user: int, code: str) -> int:
    return HTTP.post(
        f"{panel.billing_url}/internal/access-codes/redeem",
        json={"telegram_user_id": user, "code": code},
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
    ).status_code


def test_access_codes__made_unguessable_used_listed_exported_and_audited(panel: Panel) -> None:
    club = paid_channel(panel, -1001000000901, "Club")
    made = panel.call(
        "POST",
        "/v1/access-codes",
        {"channel_id": club, "days": 14, "max_uses": 2, "count": 3, "label": " Partners "},
    )
    assert made.status_code == 201, made.text
    codes = made.json()["items"]
    assert len({c["code"] for c in codes}) == 3
    for code in codes:
        assert re.fullmatch(r"[A-Z2-7]{12}", code["code"]), code
        assert (code["days"], code["max_uses"], code["label"], code["uses"]) == (
            14,
            2,
            "Partners",
            0,
        )
    first = codes[0]["code"]
    assert redeem(panel, 4001, first) == 200
    assert redeem(panel, 4002, first.lower()) == 200
    listed = panel.call("GET", f"/v1/access-codes?channel={club}&sort=-uses", role="viewer")
    assert [c["uses"] for c in listed.json()["items"]] == [2, 0, 0]

    uses = panel.call("GET", f"/v1/access-code-uses?code={codes[0]['id']}", role="viewer").json()
    assert sorted(u["telegram_user_id"] for u in uses["items"]) == [4001, 4002]
    csv = panel.call("GET", f"/v1/exports/access-code-uses.csv?code={codes[0]['id']}")
    lines = csv.text.lstrip("\ufeff").splitlines()
    assert lines[0] == "code,telegram_user_id,username,first_name,channel_title,days,used_at"
    assert len(lines) == 3 and all(line.startswith(first) for line in lines[1:])

    # Fewer uses than it had is refused; switched off, it admits nobody.
    fewer = panel.call("PATCH", f"/v1/access-codes/{codes[0]['id']}", {"max_uses": 1})
    assert fewer.json()["errors"] == [{"field": "max_uses", "code": "out-of-range"}]
    off = panel.call("PATCH", f"/v1/access-codes/{codes[1]['id']}", {"active": False})
    assert off.json()["active"] is False
    assert redeem(panel, 4003, codes[1]["code"]) == 422
    actions = panel.query(
        "SELECT action FROM audit_log WHERE action LIKE %s ORDER BY id", "access_codes.%%"
    )
    assert actions == [("access_codes.add",), ("access_codes.update",)]


def test_access_codes__refused_at_their_fields_and_nothing_made(panel: Panel) -> None:
    club = paid_channel(panel, -1001000000901, "Club")
    [(free,)] = panel.query(
        "INSERT INTO channels (telegram_chat_id, title) VALUES (-1001000000902, 'Free')"
        " RETURNING id"
    )
    base = {"channel_id": club, "days": 7}
    for change, field, code in (
        ({"channel_id": free}, "channel_id", "not-found"),
        ({"days": 0}, "days", "out-of-range"),
        ({"max_uses": 0}, "max_uses", "out-of-range"),
        ({"count": 501}, "count", "out-of-range"),
        ({"expires_at": "2020-01-01T00:00:00Z"}, "expires_at", "out-of-range"),
    ):
        refused = panel.call("POST", "/v1/access-codes", {**base, **change})
        assert refused.status_code == 422, (change, refused.text)
        assert refused.json()["errors"] == [{"field": field, "code": code}], change
    assert panel.query("SELECT count(*) FROM access_codes") == [(0,)]
    assert panel.call("PATCH", "/v1/access-codes/99999", {"active": False}).status_code == 404
