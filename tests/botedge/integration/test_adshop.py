"""The ad shop's updates applied by the dispatcher on a real database: booking in three steps
with the step in PostgreSQL, expiry after 48 hours, hashes becoming claims once."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import uuid
from typing import Any

import psycopg
import pytest

from botedge import adshop
from botedge.adshop import AdShop
from botedge.handlers import BotLogic
from botedge.outbox_store import Reply
from botedge.updates import InboxRow
from botedge.words import FSI, PDI
from shared.clock import ManualClock
from shared.db import Connection, connect
from tests.botedge.conftest import insert_bot

# What the shop says, in English.
ALREADY_SUBMITTED = adshop.ALREADY_SUBMITTED.text
EXPIRED = adshop.EXPIRED.text
NO_SLOTS = adshop.NO_SLOTS.text
NOTHING_WAITING = adshop.NOTHING_WAITING.text

ADVERTISER, OTHER = 3001, 3002
HASH = "c0ffee" + "0" * 58
_ids = itertools.count(1)


class Shop:
    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.clock = ManualClock(dt.datetime.now(dt.UTC).replace(microsecond=0))
        self.bot_id, _, _ = insert_bot(database_url)
        # No Bot API client and no tokens: the shop decides from the database alone, so its
        # updates do not wait for the bot's token to be loaded.
        self.logic = BotLogic(features=[AdShop()], clock=self.clock)

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.database_url) as conn:
            return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]

    def slot(self, title: str = "Pinned a day", price: int = 25_000_000, trx: bool = True) -> int:
        [(slot,)] = self.query(
            "INSERT INTO ad_slots (bot_id, kind, title, price_micros, accepts_trx)"
            " VALUES (%s, 'pinned_post', %s, %s, %s) RETURNING id",
            self.bot_id,
            title,
            price,
            trx,
        )
        return int(slot)

    def approved_order(self, user: int, slot: int) -> int:
        [(person,)] = self.query(
            "INSERT INTO people (telegram_user_id) VALUES (%s) ON CONFLICT (telegram_user_id)"
            " DO UPDATE SET updated_at = now() RETURNING id",
            user,
        )
        [(order,)] = self.query(
            "INSERT INTO ad_orders (slot_id, person_id, ad, price_micros, accepts_usdt,"
            " accepts_trx, status, approved_at, pay_to, trx_rate, due_at)"
            " VALUES (%s, %s, '{}', 25000000, true, true, 'approved', %s, %s, 0.25, %s)"
            " RETURNING id",
            slot,
            person,
            self.clock.now(),
            "T" + "1" * 33,
            self.clock.now() + dt.timedelta(hours=24),
        )
        return int(order)

    def row(self, user: int, kind: str, body: dict[str, Any]) -> InboxRow:
        n = next(_ids)
        return InboxRow(
            n, self.bot_id, n, user, kind, {"update_id": n, kind: body}, 1, uuid.uuid4()
        )

    def text_row(self, user: int, text: str, **extra: Any) -> InboxRow:
        person = {"id": user, "is_bot": False, "first_name": f"U{user}"}
        body = {
            "message_id": next(_ids),
            "from": person,
            "chat": {"id": user, "type": "private"},
            "date": 1,
            "text": text,
            **extra,
        }
        return self.row(user, "message", body)

    def press_row(self, user: int, data: str) -> InboxRow:
        person = {"id": user, "is_bot": False, "first_name": f"U{user}"}
        return self.row(
            user, "callback_query", {"id": str(next(_ids)), "from": person, "data": data}
        )

    async def apply(self, conn: Connection, row: InboxRow) -> list[Reply]:
        prepared = await self.logic.prepare(row)
        async with conn.transaction():
            return await self.logic.apply(conn, row, prepared)

    def send(self, row: InboxRow) -> list[Reply]:
        async def run() -> list[Reply]:
            conn = await connect(self.database_url, autocommit=True)
            async with conn:
                return await self.apply(conn, row)

        return asyncio.run(run())

    def say(self, user: int, text: str, **extra: Any) -> list[str]:
        return texts(self.send(self.text_row(user, text, **extra)))

    def press(self, user: int, data: str) -> list[Reply]:
        return self.send(self.press_row(user, data))


def texts(replies: list[Reply]) -> list[str]:
    return [str(r.payload["text"]) for r in replies if r.method == "sendMessage"]


def buttons(replies: list[Reply]) -> list[str]:
    return [
        button["callback_data"]
        for reply in replies
        for row in reply.payload.get("reply_markup", {}).get("inline_keyboard", [])
        for button in row
    ]


@pytest.fixture
def shop(database_url: str) -> Shop:
    return Shop(database_url)


def test_booking__slot_then_ad_then_confirm_makes_one_requested_order(shop: Shop) -> None:
    assert shop.say(ADVERTISER, "/ads") == [NO_SLOTS]
    slot = shop.slot("Pinned <b>a day</b>")
    shop.slot("Broadcast", 40_000_000, trx=False)
    listing = shop.send(shop.text_row(ADVERTISER, "/start ads"))
    [text] = texts(listing)
    assert (
        f"• <b>{FSI}Pinned &lt;b&gt;a day&lt;/b&gt;{PDI}</b>: 25 USDT, paid in USDT (TRC-20) or TRX"
        in text
    )
    assert f"• <b>{FSI}Broadcast{PDI}</b>: 40 USDT, paid in USDT (TRC-20)\n" in text
    assert buttons(listing)[0] == f"ads:slot:{slot}"

    chosen = shop.press(ADVERTISER, f"ads:slot:{slot}")
    assert chosen[0].method == "answerCallbackQuery"
    assert "Send the ad" in texts(chosen)[0]
    [(step,)] = shop.query("SELECT step FROM conversations")
    assert step == "ad"

    shown = shop.send(shop.text_row(ADVERTISER, "Buy <widgets> & more"))
    assert "Buy &lt;widgets&gt; &amp; more" in texts(shown)[0]
    assert buttons(shown) == ["ads:confirm", "ads:cancel"]
    # A second text replaces the ad before it is confirmed.
    shop.say(ADVERTISER, "Buy widgets today")
    assert shop.query("SELECT count(*) FROM ad_orders") == [(0,)]

    done = shop.press(ADVERTISER, "ads:confirm")
    [(order_id, status, ad, price, trx)] = shop.query(
        "SELECT id, status, ad, price_micros, accepts_trx FROM ad_orders"
    )
    assert (status, ad["text"], price, trx) == ("requested", "Buy widgets today", 25_000_000, True)
    assert texts(done) == [
        f"Order #{order_id} is with the owner for review. Once it is approved, you will get the "
        "address and the amount to pay here."
    ]
    assert shop.query("SELECT count(*) FROM conversations") == [(0,)]
    # The same button pressed again books nothing more.
    again = shop.press(ADVERTISER, "ads:confirm")
    assert again[0].payload["text"] == "Nothing to confirm."
    assert shop.query("SELECT count(*) FROM ad_orders") == [(1,)]


def test_booking__a_forwarded_post_is_the_ad(shop: Shop) -> None:
    slot = shop.slot()
    shop.press(ADVERTISER, f"ads:slot:{slot}")
    origin = {"type": "channel", "chat": {"id": -100777, "title": "Widgets News"}, "message_id": 9}
    [shown] = shop.say(ADVERTISER, "New widgets are here", forward_origin=origin)
    assert (
        f"A forwarded post from <b>{FSI}Widgets News{PDI}</b>:\n{FSI}New widgets are here{PDI}"
        in shown
    )
    shop.press(ADVERTISER, "ads:confirm")
    [(ad,)] = shop.query("SELECT ad FROM ad_orders")
    assert (ad["kind"], ad["from"], ad["chat_id"]) == ("forward", "Widgets News", ADVERTISER)


def test_booking__a_step_answered_after_49_hours_is_expired_and_books_nothing(
    shop: Shop,
) -> None:
    slot = shop.slot()
    shop.press(ADVERTISER, f"ads:slot:{slot}")
    shop.clock.advance(49 * 3600)
    assert shop.say(ADVERTISER, "My ad text") == [EXPIRED]
    assert shop.query("SELECT count(*) FROM ad_orders") == [(0,)]
    # Told once; after that the row is gone and a message is just a message again.
    assert shop.say(ADVERTISER, "My ad text") != [EXPIRED]

    # The confirm button of a preview left for 49 hours.
    shop.press(ADVERTISER, f"ads:slot:{slot}")
    shop.say(ADVERTISER, "My ad text")
    shop.clock.advance(49 * 3600)
    assert texts(shop.press(ADVERTISER, "ads:confirm")) == [EXPIRED]
    assert shop.query("SELECT count(*) FROM ad_orders") == [(0,)]
    # Never started is not "expired".
    assert shop.press(OTHER, "ads:confirm")[0].payload["text"] == "Nothing to confirm."


def test_booking__47_hours_is_still_in_time(shop: Shop) -> None:
    shop.press(ADVERTISER, f"ads:slot:{shop.slot()}")
    shop.clock.advance(47 * 3600)
    shop.say(ADVERTISER, "My ad text")
    shop.clock.advance(47 * 3600)
    shop.press(ADVERTISER, "ads:confirm")
    assert shop.query("SELECT status FROM ad_orders") == [("requested",)]


def test_hash__malformed_answered_at_once_without_a_row(shop: Shop) -> None:
    shop.approved_order(ADVERTISER, shop.slot())
    [short] = shop.say(ADVERTISER, HASH[:-1])
    assert "64 characters, this has 63" in short
    [bad] = shop.say(ADVERTISER, HASH[:-1] + "x")
    assert "only the digits 0-9" in bad
    assert shop.query("SELECT count(*) FROM tron_claims") == [(0,)]


def test_hash__no_order_waiting_is_said(shop: Shop) -> None:
    assert shop.say(ADVERTISER, HASH) == [NOTHING_WAITING]
    assert shop.query("SELECT count(*) FROM tron_claims") == [(0,)]


def test_hash__one_order_claimed_lower_cased_and_a_second_send_changes_nothing(
    shop: Shop,
) -> None:
    order = shop.approved_order(ADVERTISER, shop.slot())
    [checking] = shop.say(ADVERTISER, "0x" + HASH.upper())
    assert checking.startswith(
        f"Checking transaction <code>c0ffee00…000000</code> for order #{order}"
    )
    assert shop.query("SELECT tx_hash, order_id, state FROM tron_claims") == [
        (HASH, order, "pending")
    ]
    assert shop.say(ADVERTISER, HASH) == [ALREADY_SUBMITTED]
    assert shop.query("SELECT count(*) FROM tron_claims") == [(1,)]


def test_hash__several_orders_the_person_picks_one(shop: Shop) -> None:
    slot = shop.slot()
    first, second = shop.approved_order(ADVERTISER, slot), shop.approved_order(ADVERTISER, slot)
    asked = shop.send(shop.text_row(ADVERTISER, HASH))
    assert buttons(asked) == [f"ads:order:{first}", f"ads:order:{second}"]
    assert shop.query("SELECT count(*) FROM tron_claims") == [(0,)]
    picked = shop.press(ADVERTISER, f"ads:order:{second}")
    assert texts(picked)[0].startswith("Checking transaction")
    assert shop.query("SELECT order_id FROM tron_claims") == [(second,)]


def test_hash__sent_at_once_by_two_advertisers_one_claim_whoever_commits_first(
    shop: Shop,
) -> None:
    slot = shop.slot()
    orders = {user: shop.approved_order(user, slot) for user in (ADVERTISER, OTHER)}

    async def race(first: int, second: int, tx_hash: str) -> tuple[list[str], list[str]]:
        """`first` inserts and holds its transaction open; `second` is seen waiting on the
        hash's unique key before `first` commits."""
        one = await connect(shop.database_url, autocommit=True)
        two = await connect(shop.database_url, autocommit=True)
        watch = await connect(shop.database_url, autocommit=True)
        commit, applied = asyncio.Event(), asyncio.Event()
        first_row, second_row = shop.text_row(first, tx_hash), shop.text_row(second, tx_hash)

        async def holding() -> list[Reply]:
            prepared = await shop.logic.prepare(first_row)
            async with one.transaction():
                replies = await shop.logic.apply(one, first_row, prepared)
                applied.set()
                await commit.wait()
            return replies

        async def waiting_on_lock() -> bool:
            cur = await watch.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                (two.info.backend_pid,),
            )
            row = await cur.fetchone()
            return row is not None and row["wait_event_type"] == "Lock"

        async with one, two, watch:
            held = asyncio.create_task(holding())
            await asyncio.wait_for(applied.wait(), 10)
            late = asyncio.create_task(shop.apply(two, second_row))
            deadline = asyncio.get_running_loop().time() + 10
            while not await waiting_on_lock():
                assert asyncio.get_running_loop().time() < deadline, "the second never waited"
                await asyncio.sleep(0.01)
            commit.set()
            return texts(await held), texts(await late)

    for first, second, tx_hash in ((ADVERTISER, OTHER, HASH), (OTHER, ADVERTISER, "f" * 64)):
        won, lost = asyncio.run(race(first, second, tx_hash))
        assert won[0].startswith("Checking transaction")
        assert lost == [ALREADY_SUBMITTED]
        assert shop.query("SELECT order_id FROM tron_claims WHERE tx_hash = %s", tx_hash) == [
            (orders[first],)
        ]
