"""Reconciliation of a paid channel against Telegram: a planted intruder is taken out, a payer
who left gets a fresh invite once, one who has not used their invite yet is no difference and
gets one more only after RECONCILE_RESEND_AFTER_HOURS, the whitelist and the chat's admins are
left alone; a channel that cannot be asked is reported as such while the rest is checked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from botedge.words import FSI, PDI
from tests.billing.e2e import gateways
from tests.billing.e2e.test_reconcile import cli
from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP, SECRETS, ServiceProcess, free_port, service_env

PAID = -1001000000801
BOT = 5550801
INTRUDER, PAYER, LISTED, ADMIN, LEAVER = 7801, 7802, 7803, 7804, 7806
SERVICE = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}


def grant(billing_url: str, channel: int, user: int) -> None:
    granted = HTTP.post(
        f"{billing_url}/internal/grants",
        json={
            "telegram_user_id": user,
            "channel_id": channel,
            "until": "2031-01-01T00:00:00Z",
            "reason": "partner",
        },
        headers=SERVICE,
    )
    assert granted.status_code == 200, granted.text


def report_of(billing_url: str) -> dict[str, Any]:
    answer = HTTP.get(f"{billing_url}/internal/reconcile", headers=SERVICE, timeout=60)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def invites(edge: Edge, user: int) -> int:
    [(count,)] = edge.query(
        "SELECT count(*) FROM access_events a JOIN people p ON p.id = a.person_id"
        " WHERE p.telegram_user_id = %s AND a.kind = 'grant'",
        user,
    )
    return int(count)


def test_reconcile__an_intruder_out_a_leaver_invited_once_and_a_payer_not_joined_yet_no_difference(
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
    # Two payers granted access: one never used the invite, one joined and has left since.
    grant(billing.url, channel, PAYER)
    grant(billing.url, channel, LEAVER)
    edge.query("UPDATE access_events SET state = 'done' RETURNING id")
    # As we last saw them: three inside (the intruder's access long gone, its removal missed)
    # and the leaver inside after their grant (their leave missed).
    with psycopg.connect(database_url) as conn:
        for user in (INTRUDER, LISTED, ADMIN, LEAVER):
            conn.execute(
                "INSERT INTO people (telegram_user_id) VALUES (%s) ON CONFLICT DO NOTHING", (user,)
            )
            conn.execute(
                "INSERT INTO channel_members (channel_id, person_id, status, is_member,"
                " updated_at, last_inside_at) SELECT %s, id, %s, true, now(), now()"
                " FROM people WHERE telegram_user_id = %s",
                (channel, "creator" if user == ADMIN else "member", user),
            )
        conn.execute(
            "INSERT INTO channel_whitelist (channel_id, telegram_user_id) VALUES (%s, %s)",
            (channel, LISTED),
        )

    report = report_of(billing.url)
    assert report["ledger"]["differences"] == []
    [found] = report["channels"]
    assert (found["checked"], found["intruders"], found["missing"]) == (5, [INTRUDER], [LEAVER])
    # The payer's invite is minutes old: not a difference, and not sent again yet.
    assert (found["not_joined"], found["invite"], found["unchecked"]) == ([PAYER], [LEAVER], None)
    assert cli(billing).returncode == 1
    # A day on, the unused invite is due one more.
    edge.query(
        "UPDATE access_events a SET created_at = a.created_at - interval '25 hours' FROM people p"
        " WHERE p.id = a.person_id AND p.telegram_user_id = %s RETURNING a.id",
        PAYER,
    )
    assert report_of(billing.url)["channels"][0]["invite"] == [PAYER, LEAVER]

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
    assert (invites(edge, PAYER), invites(edge, LEAVER)) == (2, 2)

    [after] = report_of(billing.url)["channels"]
    # The leaver is still a difference, but their invite since leaving was the one they get.
    assert (after["intruders"], after["missing"], after["not_joined"]) == ([], [LEAVER], [])
    assert after["invite"] == []
    again = HTTP.post(f"{billing.url}/internal/reconcile/fix", headers=SERVICE, timeout=60)
    assert again.status_code == 200, again.text
    assert (invites(edge, PAYER), invites(edge, LEAVER)) == (2, 2)


def test_reconcile__a_channel_whose_bot_was_removed_is_reported_unchecked_and_the_rest_checked(
    edge: Edge, start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    api = edge.start_api()
    billing = start_service(
        "billing", env=service_env(database_url, BOTEDGE_URL=api.url), port=free_port()
    )
    kept, _, _ = edge.add_bot(BOT, mode="polling")
    removed, _, _ = edge.add_bot(BOT + 1, mode="polling")
    good = gateways.add_paid_channel(database_url, chat_id=PAID, currency="USD")
    orphan = gateways.add_paid_channel(database_url, chat_id=PAID - 1, currency="USD")
    edge.query("UPDATE channels SET manager_bot_id = %s WHERE id = %s RETURNING id", kept, good)
    edge.query(
        "UPDATE channels SET manager_bot_id = %s WHERE id = %s RETURNING id", removed, orphan
    )
    edge.sim_post(
        "/_sim/chats",
        {"id": PAID, "type": "channel", "title": "Paid", "admin_bots": [BOT], "members": {}},
    )
    grant(billing.url, good, PAYER)
    grant(billing.url, orphan, LEAVER)
    edge.query("UPDATE access_events SET state = 'done' RETURNING id")
    edge.query(
        "UPDATE bots SET status = 'removed', removed_at = now() WHERE id = %s RETURNING id",
        removed,
    )

    report = report_of(billing.url)
    checks = {c["channel_id"]: c for c in report["channels"]}
    assert (checks[good]["checked"], checks[good]["not_joined"]) == (1, [PAYER])
    assert checks[good]["unchecked"] is None
    assert checks[orphan]["checked"] == 0
    assert checks[orphan]["unchecked"]["reason"] == "refused"
    assert "404" in checks[orphan]["unchecked"]["detail"]
    fixed = HTTP.post(f"{billing.url}/internal/reconcile/fix", headers=SERVICE, timeout=60)
    assert fixed.status_code == 200, fixed.text
    # Something could not be checked: the command line says so apart from a difference.
    assert cli(billing).returncode == 2
    edge.query("UPDATE channels SET is_paid = false WHERE id = %s RETURNING id", orphan)
    assert cli(billing).returncode == 0


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
            "description": f"30 days of access to {FSI}Paid{PDI}",
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
