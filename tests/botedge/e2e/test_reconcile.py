"""Reconciliation of a paid channel against Telegram: a planted intruder is taken out, a payer
who is not inside gets a fresh invite, the whitelist and the chat's admins are left alone, and
once the payer has joined a second run finds nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from tests.billing.e2e import gateways
from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP, SECRETS, ServiceProcess, free_port, service_env

PAID = -1001000000801
BOT = 5550801
INTRUDER, PAYER, LISTED, ADMIN = 7801, 7802, 7803, 7804
SERVICE = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}


def test_reconcile__an_intruder_out_a_missing_payer_invited_and_then_nothing(
    edge: Edge, start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    api = edge.start_api()
    billing_port = free_port()
    billing = start_service(
        "billing", env=service_env(database_url, BOTEDGE_URL=api.url), port=billing_port
    )
    edge.extra_env["BILLING_URL"] = billing.url
    bot_id, _, _ = edge.add_bot(BOT, mode="polling")
    channel = gateways.add_paid_channel(database_url, chat_id=PAID, currency="USD")
    edge.query("UPDATE channels SET manager_bot_id = %s RETURNING id", bot_id)
    edge.sim_post(
        "/_sim/chats",
        {
            "id": PAID,
            "type": "channel",
            "title": "Paid",
            "admin_bots": [BOT],
            "members": {str(INTRUDER): "member", str(LISTED): "member", str(ADMIN): "creator"},
        },
    )
    # As we last saw them: three inside (the intruder's access long gone, its removal missed).
    with psycopg.connect(database_url) as conn:
        for user in (INTRUDER, LISTED, ADMIN):
            conn.execute(
                "WITH p AS (INSERT INTO people (telegram_user_id) VALUES (%s) RETURNING id)"
                " INSERT INTO channel_members (channel_id, person_id, status, is_member,"
                " updated_at) SELECT %s, id, %s, true, now() FROM p",
                (user, channel, "creator" if user == ADMIN else "member"),
            )
        conn.execute(
            "INSERT INTO channel_whitelist (channel_id, telegram_user_id) VALUES (%s, %s)",
            (channel, LISTED),
        )
    # A payer granted access whose invite went unused (its event done, they never joined).
    granted = HTTP.post(
        f"{billing.url}/internal/grants",
        json={
            "telegram_user_id": PAYER,
            "channel_id": channel,
            "until": "2031-01-01T00:00:00Z",
            "reason": "partner",
        },
        headers=SERVICE,
    )
    assert granted.status_code == 200, granted.text
    edge.query("UPDATE access_events SET state = 'done' RETURNING id")

    report = HTTP.get(f"{billing.url}/internal/reconcile", headers=SERVICE, timeout=60).json()
    assert report["ledger"]["differences"] == []
    [found] = report["channels"]
    assert (found["checked"], found["intruders"], found["missing"]) == (4, [INTRUDER], [PAYER])

    edge.start_worker()
    fixed = HTTP.post(f"{billing.url}/internal/reconcile/fix", headers=SERVICE, timeout=60)
    assert fixed.status_code == 200, fixed.text
    # The intruder is taken out; the whitelisted and the creator stay.
    edge.wait_until(
        lambda: (
            edge.sim_get("/_sim/view", user_id=INTRUDER, bot_id=BOT)["channels"][0]["status"]
            != "member"
        ),
        30,
        "the intruder out",
    )
    chat = {c["id"]: c for c in edge.sim_get("/_sim/view", user_id=LISTED, bot_id=BOT)["channels"]}
    assert chat[PAID]["status"] == "member"
    # The payer gets a fresh invite and joins with it.
    invite = wait_for_invite(edge)
    edge.sim_post("/_sim/join", {"chat_id": PAID, "user_id": PAYER, "invite_link": invite})
    again = HTTP.get(f"{billing.url}/internal/reconcile", headers=SERVICE, timeout=60).json()
    [after] = again["channels"]
    assert (after["intruders"], after["missing"]) == ([], [])


def wait_for_invite(edge: Edge) -> str:
    found: list[Any] = []

    def sent() -> bool:
        rows = edge.query(
            "SELECT payload FROM outbox WHERE chat_id = %s AND state = 'sent'"
            " AND dedupe_key LIKE 'access:%%'",
            PAYER,
        )
        found[:] = [row[0] for row in rows]
        return bool(found)

    edge.wait_until(sent, 30, "the payer's invite")
    return str(found[-1]["reply_markup"]["inline_keyboard"][0][0]["url"])


STARS_BOT = 5550802
STARS_CHANNEL = -1001000000802
BUYER = 7805


def test_reconcile__a_stars_payment_we_never_recorded_is_applied_once(
    edge: Edge, start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    """The api answers the pre-checkout and keeps the payment's update, but no worker ever
    records it: Telegram lists the charge and our ledger does not. The fix applies it through
    the path every payment takes; when a worker does record it later, it is a duplicate."""
    # billing and the api each ask the other: the api's port is chosen first.
    api_port = free_port()
    billing = start_service(
        "billing",
        env=service_env(database_url, BOTEDGE_URL=f"http://127.0.0.1:{api_port}"),
        port=free_port(),
    )
    edge.extra_env["BILLING_URL"] = billing.url
    api = edge.start_api(port=api_port)
    bot_id, token, secret = edge.add_bot(STARS_BOT, mode="webhook")
    hooked = HTTP.post(
        f"{edge.sim.url}/bot{token}/setWebhook",
        json={"url": f"{api.url}/telegram/{bot_id}/webhook", "secret_token": secret},
    )
    assert hooked.json()["ok"] is True
    channel = gateways.add_paid_channel(
        database_url, chat_id=STARS_CHANNEL, currency="XTR", price_minor=250
    )
    made = gateways.create_invoice(HTTP, billing.url, BUYER, channel, "telegram_stars")
    sent = HTTP.post(
        f"{edge.sim.url}/bot{token}/sendInvoice",
        json={
            "chat_id": BUYER,
            "title": "Paid",
            "description": "30 days of access to Paid",
            "payload": made["order_reference"],
            "currency": "XTR",
            "prices": [{"label": "Month", "amount": 250}],
        },
    )
    assert sent.json()["ok"] is True
    paid = edge.sim_post(
        "/_sim/pay", {"bot_id": STARS_BOT, "user_id": BUYER, "payload": made["order_reference"]}
    )
    assert paid["ok"] is True

    report = HTTP.get(f"{billing.url}/internal/reconcile", headers=SERVICE, timeout=60).json()
    [stars] = [s for s in report["stars"] if s["bot_id"] == bot_id]
    assert [m["charge_id"] for m in stars["missing_here"]] == [paid["charge_id"]]
    assert stars["missing_there"] == []
    fixed = HTTP.post(f"{billing.url}/internal/reconcile/fix", headers=SERVICE, timeout=60)
    assert fixed.status_code == 200, fixed.text
    assert edge.query("SELECT external_payment_id, applied FROM payments") == [
        (paid["charge_id"], True)
    ]
    again = HTTP.get(f"{billing.url}/internal/reconcile", headers=SERVICE, timeout=60).json()
    [after] = [s for s in again["stars"] if s["bot_id"] == bot_id]
    assert (after["checked"], after["missing_here"], after["missing_there"]) == (1, [], [])
    # The worker records the kept update at last: the same charge, nothing twice.
    edge.start_worker()
    edge.wait_until(
        lambda: (
            edge.query("SELECT state, outcome FROM telegram_payments") == [("done", "duplicate")]
        ),
        30,
        "the late record a duplicate",
    )
    assert edge.query("SELECT count(*) FROM membership_events WHERE cause = 'payment'") == [(1,)]
