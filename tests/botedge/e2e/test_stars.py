"""Telegram Stars end to end through the simulated Telegram: the bot's Stars buttons, Telegram's
invoice or subscription link, the pre-checkout answered at intake, `successful_payment` into
billing's ledger, the invite link, a renewal, a cancelled renewal, and refusals."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from botedge.words import FSI, PDI
from tests.billing.e2e import gateways
from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP, SECRETS, ServiceProcess, free_port, service_env

OPEN = f"access to {FSI}Paid{PDI} is open"

PAID = -1001000000601
BOT = 5550601
BUYER = 7601
OTHER = 7602
PRICE = 250
SERVICE = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}


@dataclass
class Stars:
    edge: Edge
    channel: int
    billing: ServiceProcess
    token: str

    def say(self, text: str, user: int = BUYER) -> None:
        self.edge.sim_post("/_sim/messages", {"bot_id": BOT, "user_id": user, "text": text})

    def sent(self, user: int = BUYER) -> list[dict[str, Any]]:
        return list(self.edge.sim_get("/_sim/sent", chat_id=user))

    def press(self, button: str, user: int = BUYER) -> Any:
        return self.edge.sim_post(
            "/_sim/press", {"bot_id": BOT, "user_id": user, "button": button, "wait": 20}
        )

    def pay(self, user: int = BUYER, **how: Any) -> dict[str, Any]:
        response = HTTP.post(
            f"{self.edge.sim.url}/_sim/pay",
            json={"bot_id": BOT, "user_id": user, **how},
            timeout=30,
        )
        assert response.status_code == 200, response.text
        return dict(response.json())

    def membership(self, user: int = BUYER) -> tuple[str, dt.datetime] | None:
        rows = self.edge.query(
            "SELECT m.status, m.expires_at FROM memberships m JOIN people p ON p.id = m.person_id"
            " WHERE p.telegram_user_id = %s AND m.channel_id = %s",
            user,
            self.channel,
        )
        return (str(rows[0][0]), rows[0][1]) if rows else None

    def subscribe(self) -> tuple[dict[str, Any], dt.datetime]:
        """The offer's Subscribe button, Telegram's link, paid: the payment as the simulator
        made it and the membership's end, once the invite link is sent."""
        edge = self.edge
        self.offer()
        self.press("Subscribe")
        edge.wait_until(
            lambda: bool(edge.query("SELECT 1 FROM outbox WHERE method = 'editMessageText'")),
            30,
            "the subscription link",
        )
        [(edit,)] = edge.query("SELECT payload FROM outbox WHERE method = 'editMessageText'")
        [[button]] = edit["reply_markup"]["inline_keyboard"]
        assert button["text"] == "Subscribe for 250 ⭐"
        assert button["url"].startswith("https://t.me/$")
        [(reference, gateway, amount, currency)] = edge.query(
            "SELECT order_reference, gateway, amount_minor, currency FROM invoices"
        )
        assert (gateway, amount, currency) == ("telegram_stars", PRICE, "XTR")
        # Paid through the link: the pre-checkout is answered within Telegram's 10 s.
        paid = self.pay(link=button["url"])
        assert paid["ok"] is True and paid["seconds"] < 10, paid
        assert paid["successful_payment"]["is_first_recurring"] is True
        # The link's payload is the order reference.
        [made] = edge.sim_get("/_sim/stars")["subscriptions"]
        assert made["payload"] == reference
        edge.wait_until(lambda: self.membership() is not None, 30, "the membership")
        edge.wait_until(
            lambda: any(OPEN in (s["text"] or "") for s in self.sent()),
            30,
            "the invite link",
        )
        status, expires = self.membership() or ("", dt.datetime.now(dt.UTC))
        assert status == "active"
        return paid, expires

    def offer(self, user: int = BUYER) -> None:
        """`/start pay_<channel>` and the plan's Stars buttons."""
        self.say(f"/start pay_{self.channel}", user)
        self.edge.wait_until(lambda: bool(self.sent(user)), 30, "the offer")

    def invoice(self, user: int = BUYER) -> str:
        """Pay once: Telegram's invoice in the chat; its payload, our order reference."""
        self.offer(user)
        self.press(f"Pay {PRICE} ⭐ once", user)
        self.edge.wait_until(
            lambda: any(s["kind"] == "invoice" for s in self.sent(user)), 30, "the invoice"
        )
        rows = self.edge.query(
            "SELECT payload FROM outbox WHERE method = 'sendInvoice' AND chat_id = %s ORDER BY id",
            user,
        )
        return str(rows[-1][0]["payload"])


@pytest.fixture
def stars(edge: Edge, start_service: Callable[..., ServiceProcess], database_url: str) -> Stars:
    billing_port = free_port()
    billing_url = f"http://127.0.0.1:{billing_port}"
    billing = start_service("billing", env=service_env(database_url), port=billing_port)
    edge.extra_env["BILLING_URL"] = billing_url
    bot_id, token, _ = edge.add_bot(BOT, mode="polling")
    channel = gateways.add_paid_channel(
        database_url, chat_id=PAID, currency="XTR", price_minor=PRICE, period_days=30
    )
    edge.query("UPDATE channels SET manager_bot_id = %s RETURNING id", bot_id)
    edge.sim_post(
        "/_sim/chats", {"id": PAID, "type": "channel", "title": "Paid", "admin_bots": [BOT]}
    )
    return Stars(edge, channel, billing, token)


def test_stars__subscribe_pay_invite_renew_extended_then_renewal_cancelled(stars: Stars) -> None:
    edge = stars.edge
    edge.start_worker()
    stars.offer()
    [offer] = stars.sent()
    assert offer["text"] == f"<b>{FSI}Paid{PDI}</b>: 250 ⭐ for 30 days.\nChoose how to pay:"
    rows = edge.query("SELECT payload FROM outbox WHERE method = 'sendMessage'")
    labels = [b["text"] for row in rows[0][0]["reply_markup"]["inline_keyboard"] for b in row]
    assert labels == ["Pay 250 ⭐ once", "Subscribe: 250 ⭐ every 30 days"]

    # Telegram dates a payment to the second.
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    paid, expires = stars.subscribe()
    assert before + dt.timedelta(days=30) <= expires <= before + dt.timedelta(days=30, minutes=5)
    said = [s["text"] or "" for s in stars.sent()]
    assert any(t.startswith(f"Subscribed to <b>{FSI}Paid{PDI}</b>: Telegram renews") for t in said)
    [(subscription_state,)] = edge.query("SELECT state FROM star_subscriptions")
    assert subscription_state == "active"

    # Telegram renews it: the same invoice paid again, extended once more, not flagged.
    renewed = HTTP.post(
        f"{edge.sim.url}/_sim/renew", json={"charge_id": paid["charge_id"]}, timeout=10
    ).json()
    assert renewed["successful_payment"]["is_first_recurring"] is False
    edge.wait_until(
        lambda: len(edge.query("SELECT 1 FROM payments")) == 2, 30, "the renewal applied"
    )
    _, extended = stars.membership() or ("", before)
    assert extended == expires + dt.timedelta(days=30)
    payments = edge.query("SELECT external_payment_id, applied, flag FROM payments ORDER BY id")
    assert payments == [
        (paid["charge_id"], True, None),
        (renewed["charge_id"], True, None),
    ]
    assert edge.query("SELECT outcome FROM gateway_events ORDER BY id") == [
        ("applied",),
        ("applied",),
    ]
    assert edge.query("SELECT DISTINCT state, outcome FROM telegram_payments") == [
        ("done", "applied")
    ]
    # The bot's Star transactions list both charges, as reconciliation will read them.
    listed = HTTP.get(f"{edge.sim.url}/bot{stars.token}/getStarTransactions").json()["result"]
    assert [(t["id"], t["amount"]) for t in listed["transactions"]] == [
        (paid["charge_id"], PRICE),
        (renewed["charge_id"], PRICE),
    ]
    [(renews_at,)] = edge.query("SELECT renews_at FROM star_subscriptions")
    assert (
        int(renews_at.timestamp()) == renewed["successful_payment"]["subscription_expiration_date"]
    )

    # The person cancels the renewal: Telegram is told, nothing more is charged.
    stars.press("Cancel renewal")
    edge.wait_until(
        lambda: edge.query("SELECT state FROM star_subscriptions") == [("canceled",)],
        30,
        "the renewal cancelled",
    )
    [subscription] = edge.sim_get("/_sim/stars")["subscriptions"]
    assert subscription["canceled"] is True
    again = HTTP.post(f"{edge.sim.url}/_sim/renew", json={"charge_id": paid["charge_id"]})
    assert again.status_code == 409
    assert stars.membership() == ("active", extended)
    edge.wait_until(
        lambda: any((s["text"] or "").startswith("Renewal cancelled") for s in stars.sent()),
        30,
        "the cancellation said",
    )


def test_stars__a_cancelled_subscription_runs_to_its_end_then_grace_and_removal(
    stars: Stars,
) -> None:
    edge = stars.edge
    edge.start_worker()
    stars.subscribe()
    [(access,)] = edge.query("SELECT payload FROM outbox WHERE dedupe_key LIKE 'access:%%'")
    invite = access["reply_markup"]["inline_keyboard"][0][0]["url"]
    edge.sim_post("/_sim/join", {"chat_id": PAID, "user_id": BUYER, "invite_link": invite})
    edge.wait_until(
        lambda: edge.query("SELECT is_member FROM channel_members") == [(True,)], 30, "joined"
    )
    # A day before the end, while Telegram renews it: the notice says so, with no pay link.
    assert notice_due(stars, dt.timedelta(hours=23)) == 1
    renews = said(stars, "renews on")
    assert renews["text"].startswith(f"Your Stars subscription to {FSI}Paid{PDI} renews on ")
    assert "reply_markup" not in renews
    stars.press("Cancel renewal")
    edge.wait_until(
        lambda: edge.query("SELECT state FROM star_subscriptions") == [("canceled",)],
        30,
        "the renewal cancelled",
    )
    # Still active until its end: nothing was taken back.
    now = stars.membership()
    assert now is not None and now[0] == "active"
    # Once cancelled, the notice says no Stars are taken, with the way to pay again.
    assert notice_due(stars, dt.timedelta(hours=22)) == 1
    ends = said(stars, "You cancelled its renewal, so no Stars are taken")
    assert ends["reply_markup"]["inline_keyboard"][0][0]["text"] == "Renew"

    # The period runs out: grace, and the reminder says no renewal is coming.
    lapse(stars, dt.timedelta(minutes=1))
    assert sweep(stars)["to_grace"] == 1
    edge.wait_until(
        lambda: any("none is coming" in (s["text"] or "") for s in stars.sent()),
        30,
        "the reminder",
    )
    reminder = next(s["text"] for s in stars.sent() if "none is coming" in (s["text"] or ""))
    assert reminder == (
        f"Your subscription to {FSI}Paid{PDI} has ended. You cancelled its renewal, so none is"
        " coming. Renew within 3 days to stay."
    )
    # Grace runs out: removed, as any membership.
    long_past = lapse(stars, dt.timedelta(days=5))
    assert sweep(stars)["to_expired"] == 1
    edge.wait_until(
        lambda: edge.query("SELECT is_member FROM channel_members") == [(False,)], 30, "removed"
    )
    assert stars.membership() == ("expired", long_past)
    edge.wait_until(
        lambda: any(
            (s["text"] or "").startswith(f"Your access to {FSI}Paid{PDI} has ended")
            for s in stars.sent()
        ),
        30,
        "the removal said",
    )


def test_stars__removed_by_the_owner_out_at_once_and_the_renewal_stopped_in_telegram(
    stars: Stars,
) -> None:
    """An owner's removal of a member whose access Telegram renews by Stars: out of the channel
    now, and the renewal cancelled by the bot that sold it, or Telegram would charge them again
    and the payment would let them back in."""
    edge = stars.edge
    edge.start_worker()
    stars.subscribe()
    [made] = edge.sim_get("/_sim/stars")["subscriptions"]
    assert made["canceled"] is False
    body = {
        "telegram_user_id": BUYER,
        "channel_id": stars.channel,
        "request_key": "press-7601:1:1",
        "reason": "removed by owner@example.com",
    }
    removed = HTTP.post(f"{stars.billing.url}/internal/removals", json=body, headers=SERVICE)
    assert removed.status_code == 200, removed.text
    assert removed.json()["applied"] is True
    edge.wait_until(
        lambda: edge.query("SELECT state FROM star_subscriptions") == [("canceled",)],
        30,
        "the renewal stopped",
    )
    [after] = edge.sim_get("/_sim/stars")["subscriptions"]
    assert after["canceled"] is True
    calls = edge.sim_get("/_sim/calls", method="editUserStarSubscription")
    assert [c["status"] for c in calls] == [200]
    edge.wait_until(
        lambda: (
            edge.query("SELECT kind, state FROM access_events WHERE kind = 'revoke'")
            == [("revoke", "done")]
        ),
        30,
        "the revoke done",
    )
    after_removal = stars.membership()
    assert after_removal is not None and after_removal[0] == "expired"


def notice_due(stars: Stars, left: dt.timedelta) -> int:
    """The membership made to end in `left`, past its 24-hour reminder; the sweep's count of
    notices written."""
    now = dt.datetime.now(dt.UTC)
    stars.edge.query(
        "UPDATE memberships SET expires_at = %s, next_check_at = %s RETURNING person_id",
        now + left,
        now - dt.timedelta(minutes=1),
    )
    return int(sweep(stars)["reminded"])


def said(stars: Stars, text: str) -> dict[str, Any]:
    """The newest message to the buyer containing `text`, once sent, as the bot queued it."""
    found: list[dict[str, Any]] = []

    def sent() -> bool:
        rows = stars.edge.query(
            "SELECT payload FROM outbox WHERE chat_id = %s AND state = 'sent'"
            " AND payload->>'text' LIKE %s ORDER BY id",
            BUYER,
            f"%{text}%",
        )
        found[:] = [row[0] for row in rows]
        return bool(found)

    stars.edge.wait_until(sent, 30, text)
    return found[-1]


def lapse(stars: Stars, ago: dt.timedelta) -> dt.datetime:
    """The membership's period made to have ended `ago`, due for the sweep; that end."""
    ended = dt.datetime.now(dt.UTC) - ago
    stars.edge.query(
        "UPDATE memberships SET expires_at = %s, next_check_at = %s RETURNING person_id",
        ended,
        ended,
    )
    return ended


def sweep(stars: Stars) -> dict[str, Any]:
    answer = HTTP.post(f"{stars.billing.url}/v1/sweep", headers=gateways.sweep_request())
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_stars__pre_checkout_refused_with_its_reason_and_nothing_recorded(stars: Stars) -> None:
    edge = stars.edge
    edge.start_worker()
    reference = stars.invoice()
    invoice_message = next(s for s in stars.sent() if s["kind"] == "invoice")
    assert invoice_message["text"] == "Paid: 250 XTR"

    no_invoice = stars.pay(payload="gh_" + "x" * 24, total_amount=PRICE)
    others = stars.pay(user=OTHER, payload=reference)
    wrong_amount = stars.pay(payload=reference, total_amount=PRICE - 1)
    wrong_currency = stars.pay(payload=reference, currency="USD")
    edge.query(
        "UPDATE invoices SET expires_at = now() - interval '1 minute'"
        " WHERE order_reference = %s RETURNING id",
        reference,
    )
    expired = stars.pay(payload=reference)
    said = {
        "no invoice": no_invoice,
        "another person's": others,
        "wrong amount": wrong_amount,
        "wrong currency": wrong_currency,
        "expired": expired,
    }
    assert {what: (a["ok"], a["error_message"]) for what, a in said.items()} == {
        "no invoice": (
            False,
            "This invoice is not one of ours. Open the channel's pay link in the bot again.",
        ),
        "another person's": (
            False,
            "This invoice was made for someone else. Ask the bot for your own.",
        ),
        "wrong amount": (
            False,
            "The price of this invoice has changed. Ask the bot for a new one.",
        ),
        "wrong currency": (
            False,
            "This invoice is paid in Telegram Stars (XTR) only. Ask the bot for a new one.",
        ),
        "expired": (False, "This invoice has expired. Ask the bot for a new one."),
    }
    assert all(a["seconds"] < 10 for a in said.values())
    answers = edge.sim_get("/_sim/stars")["answers"]
    assert [a["ok"] for a in answers] == [False] * 5
    # Stored for the record, and nothing else.
    edge.wait_until(
        lambda: (
            edge.query(
                "SELECT count(*) FROM inbox WHERE kind = 'pre_checkout_query' AND state = 'done'"
            )
            == [(5,)]
        ),
        30,
        "the queries kept",
    )
    for table in ("telegram_payments", "payments", "memberships", "gateway_events"):
        assert edge.query(f"SELECT count(*) FROM {table}") == [(0,)], table

    # The same invoice, while open and by its own person, goes through.
    edge.query(
        "UPDATE invoices SET expires_at = now() + interval '1 hour'"
        " WHERE order_reference = %s RETURNING id",
        reference,
    )
    assert stars.pay(payload=reference)["ok"] is True
    edge.wait_until(lambda: stars.membership() is not None, 30, "paid once open")
    # Paid, it is refused from then on.
    assert stars.pay(payload=reference)["error_message"] == "This invoice is paid already."


def test_stars__one_successful_payment_in_two_updates_at_once_extends_once(
    stars: Stars, start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    edge = stars.edge
    edge.start_worker()
    edge.start_worker()
    # A second billing process: both ledger loops claim at once.
    start_service("billing", env=service_env(database_url))
    reference = stars.invoice()
    paid = stars.pay(payload=reference)
    assert paid["ok"] is True
    message = edge.sim_get(f"/_sim/chats/{BUYER}/messages")
    again = next(m for m in message if "successful_payment" in m)
    barrier = threading.Barrier(2)

    def redeliver() -> None:
        barrier.wait()
        edge.sim_post("/_sim/updates", {"bot_id": BOT, "update": {"message": again}})

    threads = [threading.Thread(target=redeliver) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    edge.wait_until(
        lambda: (
            edge.query(
                "SELECT count(*) FROM inbox WHERE payload ? 'message'"
                " AND payload->'message' ? 'successful_payment' AND state = 'done'"
            )
            == [(3,)]
        ),
        30,
        "three updates with the payment handled",
    )
    edge.wait_until(
        lambda: edge.query("SELECT state FROM telegram_payments") == [("done",)], 30, "applied"
    )
    assert edge.query("SELECT count(*) FROM payments") == [(1,)]
    assert edge.query("SELECT count(*) FROM membership_events WHERE cause = 'payment'") == [(1,)]
    assert edge.query("SELECT count(*) FROM access_events WHERE kind = 'grant'") == [(1,)]


WAITING = 10_000
HOOKED = 5550602


def test_stars__pre_checkout_answered_at_intake_with_ten_thousand_updates_waiting(
    stars: Stars,
) -> None:
    """A webhook bot with 10,000 updates in the inbox and no worker to take them: the query is
    answered by the api process as it comes in, not after them."""
    edge = stars.edge
    bot_id, token, secret = edge.add_bot(HOOKED, mode="webhook")
    api = edge.start_api()
    sim = edge.sim.url
    hooked = HTTP.post(
        f"{sim}/bot{token}/setWebhook",
        json={"url": f"{api.url}/telegram/{bot_id}/webhook", "secret_token": secret},
    )
    assert hooked.json()["ok"] is True
    made = gateways.create_invoice(HTTP, stars.billing.url, BUYER, stars.channel, "telegram_stars")
    assert (made["amount"], made["currency"], made["pay_url"]) == ("250", "XTR", None)
    sent = HTTP.post(
        f"{sim}/bot{token}/sendInvoice",
        json={
            "chat_id": BUYER,
            "title": "Paid",
            "description": f"30 days of access to {FSI}Paid{PDI}",
            "payload": made["order_reference"],
            "currency": "XTR",
            "prices": [{"label": "default", "amount": PRICE}],
        },
    )
    assert sent.json()["ok"] is True
    edge.query(
        "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload)"
        " SELECT %s, n, 100000 + n %% 2000, 'message',"
        "        jsonb_build_object('update_id', n, 'message', jsonb_build_object("
        "            'message_id', n, 'chat', jsonb_build_object('id', 100000 + n %% 2000,"
        "            'type', 'private'), 'date', 1790000000, 'text', 'hi'))"
        "   FROM generate_series(1, %s) n RETURNING 1",
        bot_id,
        WAITING,
    )
    paid = HTTP.post(
        f"{sim}/_sim/pay",
        json={"bot_id": HOOKED, "user_id": BUYER, "payload": made["order_reference"]},
        timeout=30,
    ).json()
    waiting = edge.query(
        "SELECT count(*) FROM inbox WHERE state = 'waiting' AND chat_key >= 100000"
    )
    print(
        f"\npre-checkout answered in {paid['seconds']:.3f} s with {waiting[0][0]} updates waiting"
    )
    assert paid["ok"] is True and paid["seconds"] < 10, paid
    assert waiting == [(WAITING,)]
    # Kept for the record once answered (stored just after the answer went out); the payment
    # waits its turn behind the person's own.
    # (Telegram sends the payment after the answer: both are awaited, not read at once.)
    edge.wait_until(
        lambda: (
            edge.query("SELECT count(*) FROM inbox WHERE kind = 'pre_checkout_query'") == [(1,)]
            and edge.query(
                "SELECT count(*) FROM inbox WHERE payload->'message' ? 'successful_payment'"
            )
            == [(1,)]
        ),
        10,
        "the pre-checkout kept and the payment received",
    )


def test_stars__telegrams_subscription_update_records_the_renewal_state_and_no_webhook(
    stars: Stars,
) -> None:
    edge = stars.edge
    edge.start_worker()
    paid, _ = stars.subscribe()
    payload = paid["successful_payment"]["invoice_payload"]
    for state in ("failed", "active", "canceled"):
        edge.sim_post(
            "/_sim/updates",
            {
                "bot_id": BOT,
                "update": {
                    "subscription": {
                        "user": {"id": BUYER, "is_bot": False, "first_name": "B"},
                        "invoice_payload": payload,
                        "state": state,
                    }
                },
            },
        )
        edge.wait_until(
            lambda state=state: edge.query("SELECT state FROM star_subscriptions") == [(state,)],
            30,
            f"the subscription {state}",
        )
    # Stars have no webhook: Telegram tells the bot, never billing.
    hook = HTTP.post(f"{stars.billing.url}/v1/webhooks/payments/telegram_stars", json={})
    assert hook.status_code == 404
    assert hook.json()["type"] == "/problems/unknown-gateway"


def test_stars__the_renewal_refunded_twice_takes_back_its_period_once(stars: Stars) -> None:
    edge = stars.edge
    edge.start_worker()
    paid, after_first = stars.subscribe()
    renewed = HTTP.post(
        f"{edge.sim.url}/_sim/renew", json={"charge_id": paid["charge_id"]}, timeout=10
    ).json()
    edge.wait_until(
        lambda: len(edge.query("SELECT 1 FROM payments WHERE applied")) == 2, 30, "renewed"
    )
    assert stars.membership() == ("active", after_first + dt.timedelta(days=30))
    [(renewal_id,)] = edge.query(
        "SELECT id FROM payments WHERE external_payment_id = %s", renewed["charge_id"]
    )
    # The owner asks twice: one request, one refundStarPayment.
    url = f"{stars.billing.url}/internal/payments/{renewal_id}/refund"
    asked = [
        HTTP.post(url, json={"requested_by": "owner@example.com"}, headers=SERVICE)
        for _ in range(2)
    ]
    assert [a.status_code for a in asked] == [202, 202]
    assert asked[0].json()["request_id"] == asked[1].json()["request_id"]
    edge.wait_until(
        lambda: edge.query("SELECT count(*) FROM refunds") == [(1,)], 30, "the refund applied"
    )
    # Back to where the first payment left it; the subscriber keeps that month.
    assert stars.membership() == ("active", after_first)
    calls = edge.sim_get("/_sim/calls")
    assert [c["method"] for c in calls].count("refundstarpayment") == 1
    # Telegram's refunded_payment delivered again changes nothing.
    message = next(
        m for m in edge.sim_get(f"/_sim/chats/{BUYER}/messages") if "refunded_payment" in m
    )
    edge.sim_post("/_sim/updates", {"bot_id": BOT, "update": {"message": message}})
    edge.wait_until(
        lambda: (
            edge.query(
                "SELECT count(*) FROM inbox WHERE payload->'message' ? 'refunded_payment'"
                " AND state = 'done'"
            )
            == [(2,)]
        ),
        30,
        "the second delivery handled",
    )
    assert edge.query("SELECT kind, state, outcome FROM telegram_payments ORDER BY id") == [
        ("payment", "done", "applied"),
        ("payment", "done", "applied"),
        ("refund", "done", "refund_applied"),
    ]
    assert stars.membership() == ("active", after_first)
    assert edge.query("SELECT state FROM star_refund_requests") == [("done",)]
    unknown = f"{stars.billing.url}/internal/payments/{renewal_id + 1000}/refund"
    assert HTTP.post(unknown, headers=SERVICE).status_code == 404
