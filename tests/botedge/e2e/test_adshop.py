"""The ad shop end to end: the bot, the panel API, billing and both simulators as real parts.
Booked in the chat, approved in the panel, paid in two parts on the simulated TRON."""

from __future__ import annotations

import io
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import psycopg
import pytest
import zxingcpp
from PIL import Image
from tronpy.keys import to_base58check_address

from botedge.adshop import ALREADY_SUBMITTED
from botedge.words import FSI, PDI
from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from shared.units import decimal_text, sun_for
from tests.botedge.e2e.conftest import Edge
from tests.conftest import (
    HTTP,
    TEST_BCRYPT_ROUNDS,
    Serve,
    Served,
    panel_settings,
    serve_billing,
    serve_simtrongrid,
)
from tests.panel_api.e2e.conftest import PASSWORD, SHOP, Panel, owner_and_viewer

# The slot's title as the bot shows it: escaped, and isolated as the owner's words.
PINNED = f"{FSI}Pinned &lt;24h&gt;{PDI}"

BOT = 5550301
ADVERTISER, RIVAL = 8101, 8102
PAYER = str(to_base58check_address(bytes([0x41]) + bytes([0x22]) * 20))
# Short claims and leases: a killed worker's are taken over within seconds.
TAKEOVER = {"WORKER_LOCK_SECONDS": "2", "LEASE_SECONDS": "9"}


@dataclass
class Rig:
    edge: Edge
    chain: Served
    panel: Panel
    bot_id: int

    def say(self, user: int, text: str) -> None:
        self.edge.sim_post("/_sim/messages", {"bot_id": BOT, "user_id": user, "text": text})

    def sent(self, user: int) -> list[dict[str, Any]]:
        return list(self.edge.sim_get("/_sim/sent", chat_id=user))

    def reply(self, user: int, count: int, what: str) -> dict[str, Any]:
        """Wait for the `count`th message to `user`; it."""
        self.edge.wait_until(lambda: len(self.sent(user)) >= count, 60, what)
        return self.sent(user)[count - 1]

    def press(self, user: int, message_id: int, data: str) -> None:
        self.edge.sim_post(
            "/_sim/press",
            {"bot_id": BOT, "user_id": user, "message_id": message_id, "data": data},
        )

    def pay(self, coin: str, amount: int) -> str:
        answer = HTTP.post(
            f"{self.chain.url}/_sim/transactions",
            json={"kind": coin, "from": PAYER, "to": SHOP, "amount": amount},
        )
        answer.raise_for_status()
        return str(answer.json()["tx_hash"])


@pytest.fixture
def rig(edge: Edge, serve: Serve, database_url: str) -> Iterator[Rig]:
    chain = serve_simtrongrid(serve)
    sources = ",".join(f"{n}={chain.url}" for n in ("coingecko", "kraken", "binance"))
    billing = serve_billing(
        serve,
        database_url,
        TRONGRID_URL=chain.url,
        TRX_RATE_SOURCES=sources,
        TRON_CHECK_INTERVAL="0.2",
    )
    bot_id, _, _ = edge.add_bot(BOT, mode="polling")
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    with serve_in_thread(create_app(panel_settings(database_url, BILLING_URL=billing.url))) as url:
        panel = Panel(url, owner_and_viewer(url), bot_id, database_url, billing.url)
        assert panel.call("PATCH", "/v1/workspace", {"tron_address": SHOP}).status_code == 200
        yield Rig(edge, chain, panel, bot_id)


def slot(rig: Rig, price: str = "50") -> int:
    made = rig.panel.call(
        "POST",
        "/v1/ad-slots",
        {
            "bot_id": rig.bot_id,
            "kind": "pinned_post",
            "title": "Pinned <24h>",
            "price": price,
            "accepts_trx": True,
        },
    )
    assert made.status_code == 201, made.text
    return int(made.json()["id"])


def buttons(message: dict[str, Any]) -> list[str]:
    return [b["callback_data"] for row in message["reply_markup"]["inline_keyboard"] for b in row]


def test_ad_shop__book_approve_pay_half_then_the_rest(rig: Rig) -> None:
    edge = rig.edge
    slot_id = slot(rig)
    edge.start_worker()

    # Book: the list, a slot, the ad, confirm.
    rig.say(ADVERTISER, "/ads")
    listing = rig.reply(ADVERTISER, 1, "the slot list")
    assert f"<b>{PINNED}</b>: 50 USDT, paid in USDT (TRC-20) or TRX" in listing["text"]
    rig.press(ADVERTISER, listing["message_id"], f"ads:slot:{slot_id}")
    asked = rig.reply(ADVERTISER, 2, "asked for the ad")
    assert "Send the ad" in asked["text"]
    rig.say(ADVERTISER, "Widgets & gadgets, 20% off")
    shown = rig.reply(ADVERTISER, 3, "the preview")
    assert "Widgets &amp; gadgets, 20% off" in shown["text"]
    preview_id = shown["message_id"]
    rows = edge.query("SELECT payload FROM outbox WHERE payload->>'text' LIKE 'Your ad%%'")
    assert buttons(rows[0][0]) == ["ads:confirm", "ads:cancel"]
    rig.press(ADVERTISER, preview_id, "ads:confirm")
    booked = rig.reply(ADVERTISER, 4, "the booking confirmed")
    [(order, status, ad)] = edge.query("SELECT id, status, ad FROM ad_orders")
    assert (status, ad["text"]) == ("requested", "Widgets & gadgets, 20% off")
    assert booked["text"].startswith(f"Order #{order} is with the owner for review.")

    # Approve in the panel: a viewer cannot; the owner can.
    denied = rig.panel.call("POST", f"/v1/ad-orders/{order}/approve", role="viewer")
    assert denied.status_code == 403
    approved = rig.panel.call("POST", f"/v1/ad-orders/{order}/approve")
    assert approved.status_code == 200, approved.text
    rate = Decimal(approved.json()["trx_rate"])
    photo = rig.reply(ADVERTISER, 5, "the address, the amount and the QR code")
    assert photo["kind"] == "photo"
    trx = decimal_text(sun_for(50_000_000, rate))
    assert (
        f"Pay <b>50 USDT</b> (TRC-20) or <b>{trx} TRX</b> to\n<code>{SHOP}</code>\n"
        in (photo["text"])
    )
    png = HTTP.get(f"{edge.sim.url}/_sim/files/{photo['file_id']}").content
    decoded = [code.text for code in zxingcpp.read_barcodes(Image.open(io.BytesIO(png)))]
    assert decoded == [SHOP]

    # Half, then the rest, each with its hash.
    first = rig.pay("usdt", 25_000_000)
    rig.say(ADVERTISER, first)
    assert rig.reply(ADVERTISER, 6, "checking")["text"].startswith("Checking transaction")
    part = rig.reply(ADVERTISER, 7, "part paid")
    [(due,)] = edge.query("SELECT due_at FROM ad_orders")
    left_trx = decimal_text(sun_for(25_000_000, rate))
    assert part["text"] == (
        f"25 USDT arrived for order #{order}: 25 USDT of 50 USDT paid. <b>25 USDT</b> or"
        f" <b>{left_trx} TRX</b> left to pay by {due.strftime('%Y-%m-%d %H:%M UTC')}."
        " Send the hash of the next payment here."
    )
    # The same hash again: said, and nothing changes.
    rig.say(ADVERTISER, "0x" + first.upper())
    assert rig.reply(ADVERTISER, 8, "already submitted")["text"] == ALREADY_SUBMITTED.text

    second = rig.pay("usdt", 25_000_000)
    rig.say(ADVERTISER, second)
    assert rig.reply(ADVERTISER, 9, "checking")["text"].startswith("Checking transaction")
    paid = rig.reply(ADVERTISER, 10, "paid")
    assert f"order #{order} (<b>{PINNED}</b>) is paid in full, 50 USDT of 50 USDT" in (paid["text"])
    assert edge.query("SELECT status, paid_micros FROM ad_orders") == [("paid", 50_000_000)]
    assert edge.query("SELECT count(*) FROM tron_claims") == [(2,)]

    # Every event told once: credited said with the status it caused.
    edge.wait_until(
        lambda: edge.query("SELECT count(*) FROM ad_order_events WHERE state <> 'done'") == [(0,)],
        30,
        "every event handled",
    )
    assert len(rig.sent(ADVERTISER)) == 10
    # Approving a paid order: billing's 409 through the panel.
    again = rig.panel.call("POST", f"/v1/ad-orders/{order}/approve")
    assert (again.status_code, again.json()["type"]) == (409, "/problems/conflict")


def test_ad_shop__one_hash_from_two_advertisers_at_once_is_one_claim(rig: Rig) -> None:
    edge = rig.edge
    slot_id = slot(rig)
    for user in (ADVERTISER, RIVAL):
        edge.query(
            "WITH p AS (INSERT INTO people (telegram_user_id) VALUES (%s) RETURNING id)"
            " INSERT INTO ad_orders (slot_id, person_id, ad, price_micros, accepts_usdt,"
            " accepts_trx, status, approved_at, pay_to, trx_rate, due_at)"
            " SELECT %s, id, '{}', 50000000, true, true, 'approved', now(), %s, 0.25,"
            " now() + interval '1 day' FROM p RETURNING id",
            user,
            slot_id,
            SHOP,
        )
    tx_hash = rig.pay("usdt", 10_000_000)
    edge.start_worker()
    rig.say(ADVERTISER, tx_hash)
    rig.say(RIVAL, tx_hash)
    answers = sorted(
        rig.reply(user, 1, f"{user} answered")["text"][:20] for user in (ADVERTISER, RIVAL)
    )
    assert answers == sorted([ALREADY_SUBMITTED.text[:20], "Checking transaction"])
    assert edge.query("SELECT count(*) FROM tron_claims") == [(1,)]


@pytest.mark.slow(13)
def test_ad_shop__a_worker_killed_on_the_approved_event_queues_its_message_once(
    rig: Rig,
) -> None:
    edge = rig.edge
    slot_id = slot(rig)
    [(order,)] = edge.query(
        "WITH p AS (INSERT INTO people (telegram_user_id) VALUES (%s) RETURNING id)"
        " INSERT INTO ad_orders (slot_id, person_id, ad, price_micros, accepts_usdt, accepts_trx)"
        ' SELECT %s, id, \'{"text": "Ad"}\', 50000000, true, true FROM p RETURNING id',
        ADVERTISER,
        slot_id,
    )
    first = edge.start_worker(**TAKEOVER)
    edge.wait_for_sender(rig.bot_id)
    with psycopg.connect(edge.database_url) as holder:
        # Nothing can be queued while the test holds the outbox: the worker handling the
        # event stops inside its transaction, and is killed there.
        holder.execute("LOCK TABLE outbox IN EXCLUSIVE MODE")
        assert rig.panel.call("POST", f"/v1/ad-orders/{order}/approve").status_code == 200
        edge.wait_until(
            lambda: (
                edge.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND query LIKE 'INSERT INTO outbox%%'"
                )
                == [(1,)]
            ),
            30,
            "the approved event being queued",
        )
        assert edge.query("SELECT state, attempts FROM ad_order_events") == [("processing", 1)]
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait()
        edge.start_worker(**TAKEOVER)
        holder.rollback()
    photo = rig.reply(ADVERTISER, 1, "the approval sent")
    assert photo["kind"] == "photo" and SHOP in photo["text"]
    edge.wait_until(
        lambda: edge.query("SELECT state FROM ad_order_events") == [("done",)], 30, "event done"
    )
    [(attempts,)] = edge.query("SELECT attempts FROM ad_order_events")
    assert attempts == 2
    assert edge.query("SELECT count(*) FROM outbox WHERE dedupe_key LIKE 'ad_event:%%'") == [(1,)]
    assert len(rig.sent(ADVERTISER)) == 1
