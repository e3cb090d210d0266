"""The ad shop in the bot: booking an ad and paying for it with a TRON transaction hash. What
the advertiser is told as the order moves on is `ad_messages`.

- `/start ads` or `/ads` lists the bot's slots. Booking is three steps: a slot (button), the
  ad (a text or a forwarded post), confirm (button), which writes the `ad_orders` row
  `requested`. The step lives in `conversations`, 48 hours; a row past that is kept to say
  "expired" rather than "never started".
- A message that is a transaction hash (64 hex characters, `0x` optional) becomes a
  `tron_claims` row for the person's order awaiting payment; billing checks it on chain. With
  several such orders the person picks one (the hash waits in the conversation: a button's
  data is too short for it). A hash's unique key makes it pay one order once.

Everything here runs inside the update's (or the event's) transaction: no network call.
Texts go out with parse_mode=HTML; what people or owners wrote is escaped.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass
from typing import Any

from psycopg.types.json import Jsonb

from botedge import sqlq
from botedge.ids import BotId
from botedge.outbox_store import Reply
from botedge.routing import (
    Context,
    Routes,
    Step,
    Visit,
    callback_answer,
    default_reply,
    end_step,
    html_message,
    read_step,
    set_step,
)
from botedge.text import coins, escape_html, short_hash, usdt
from botedge.updates import InboxRow
from botedge.words import Speech, isolate, msg, number
from shared.db import Connection

Q = sqlq.Q

STEP_TTL = dt.timedelta(hours=48)
PREVIEW_CHARS = 3000

_HASH = re.compile(r"(?:0[xX])?([0-9a-fA-F]{64})", re.ASCII)
# One word of letters and digits about a hash's length: meant as a hash, and not one.
_HASHLIKE = re.compile(r"(?:0[xX])?[0-9A-Za-z]{32,100}", re.ASCII)

NO_SLOTS = msg("ads.no_slots", "No ad slots are on sale here right now.")
EXPIRED = msg(
    "ads.expired",
    "This request has expired: a booking waits 48 hours for its next step. Send /ads to start "
    "again.",
)
NOTHING_WAITING = msg(
    "ads.nothing_waiting",
    "You have no ad order waiting for payment here. Book one with /ads; once the owner approves "
    "it, send the hash of your payment.",
)
ALREADY_SUBMITTED = msg("ads.already_submitted", "This transaction was already submitted.")
SEND_AD = msg(
    "ads.send_ad", "Send the ad as a text message, or forward the post you want published."
)
NOT_HEX = msg(
    "ads.not_hex",
    "That is not a transaction hash: a hash has only the digits 0-9 and the letters a-f. Copy "
    "it from your wallet or from Tronscan and send it again.",
)
WRONG_LENGTH = msg(
    "ads.wrong_length",
    "That is not a transaction hash: a hash has 64 characters, this has {count}. Copy it whole "
    "and send it again.",
    "That is not a transaction hash: a hash has 64 characters, this has {count}. Copy it whole "
    "and send it again.",
)
SLOT_LINE = msg("ads.slot_line", "• <b>{title}</b>: {price}, paid in {coins}")
SLOTS = msg("ads.slots", "Ad slots in this bot:")
CHOOSE_SLOT = msg("ads.choose_slot", "Choose one to book it.")
NO_TEXT = msg("ads.no_text", "(no text)")
FORWARDED = msg("ads.forwarded", "A forwarded post:")
FORWARDED_FROM = msg("ads.forwarded_from", "A forwarded post from <b>{title}</b>:")
YOUR_AD = msg("ads.your_ad", "Your ad for <b>{title}</b>, {price}:")
REVIEW_QUESTION = msg(
    "ads.review_question",
    "Send it to the owner for review? You can also send another text to replace it.",
)
CANCEL_LABEL = msg("ads.cancel", "Cancel")
CANCELLED = msg("ads.cancelled", "Cancelled")
BOOKING_CANCELLED = msg("ads.booking_cancelled", "Booking cancelled.")
SLOT_GONE = msg("ads.slot_gone", "That slot is no longer on sale.")
BOOKING = msg("ads.booking", "Booking <b>{title}</b> for {price}, paid in {coins}.")
NOTHING_TO_CONFIRM = msg("ads.nothing_to_confirm", "Nothing to confirm.")
NOT_BOOKED = msg(
    "ads.not_booked", "That slot is no longer on sale, so nothing was booked. See /ads for others."
)
WITH_OWNER = msg(
    "ads.with_owner",
    "Order #{order} is with the owner for review. Once it is approved, you will get the address "
    "and the amount to pay here.",
)
SENT_FOR_REVIEW = msg("ads.sent_for_review", "Sent for review")
HASH_AGAIN = msg("ads.hash_again", "Send the transaction hash again.")
NOT_WAITING = msg("ads.not_waiting", "That order is no longer waiting for payment.")
CHECKING = msg(
    "ads.checking",
    "Checking transaction <code>{hash}</code> for order #{order}. I will write here once it is "
    "confirmed on TRON, usually within a few minutes.",
)
SEND_FOR_REVIEW = msg("ads.send_for_review", "Send for review")
USE_BUTTONS = msg("ads.use_buttons", "Choose one of the buttons above, or send /ads to start over.")
LEFT = msg("ads.left", "{price} left")
WHICH_ORDER = msg("ads.which_order", "Which order does <code>{hash}</code> pay for?")


def parse_hash(text: Any) -> str | None:
    """A transaction hash as billing stores it (lower case, no 0x), or None."""
    if not isinstance(text, str):
        return None
    match = _HASH.fullmatch(text.strip())
    return match.group(1).lower() if match else None


def hash_problem(text: Any, say: Speech) -> str | None:
    """What is wrong with a message meant as a hash; None when it does not look like one."""
    if not isinstance(text, str) or not _HASHLIKE.fullmatch(text.strip()):
        return None
    word = text.strip()
    digits = word[2:] if word[:2] in ("0x", "0X") else word
    if not all(c in "0123456789abcdefABCDEF" for c in digits):
        return say(NOT_HEX)
    if len(digits) != 64:
        return say(WRONG_LENGTH, len(digits))
    return None


@dataclass(frozen=True)
class Slot:
    id: int
    title: str
    price_micros: int
    accepts_usdt: bool
    accepts_trx: bool

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Slot:
        return cls(
            int(row["id"]),
            str(row["title"]),
            int(row["price_micros"]),
            bool(row["accepts_usdt"]),
            bool(row["accepts_trx"]),
        )

    def coins(self, say: Speech) -> str:
        return coins(say, self.accepts_usdt, self.accepts_trx)


def shophtml_message(slots: list[Slot], say: Speech) -> str:
    if not slots:
        return say(NO_SLOTS)
    lines = [
        say(
            SLOT_LINE,
            title=isolate(escape_html(slot.title)),
            price=usdt(say, slot.price_micros),
            coins=slot.coins(say),
        )
        for slot in slots
    ]
    return say(SLOTS) + "\n\n" + "\n".join(lines) + "\n\n" + say(CHOOSE_SLOT)


def ad_of(message: dict[str, Any]) -> dict[str, Any] | None:
    """The ad in a message: a forwarded post (any kind), or a text; None for anything else."""
    where = {
        "chat_id": (message.get("chat") or {}).get("id"),
        "message_id": message.get("message_id"),
    }
    text = message.get("text") if isinstance(message.get("text"), str) else None
    caption = message.get("caption") if isinstance(message.get("caption"), str) else None
    origin = message.get("forward_origin")
    if isinstance(origin, dict) or "forward_from_chat" in message:
        source = origin.get("chat") if isinstance(origin, dict) else message["forward_from_chat"]
        return {
            "kind": "forward",
            **where,
            "text": text or caption or "",
            "from": (source or {}).get("title") if isinstance(source, dict) else None,
        }
    if text and text.strip():
        return {"kind": "text", **where, "text": text, "entities": message.get("entities") or []}
    return None


def preview(slot: dict[str, Any], ad: dict[str, Any], say: Speech) -> str:
    body = str(ad.get("text") or "")
    if len(body) > PREVIEW_CHARS:
        body = body[:PREVIEW_CHARS] + "…"
    shown = isolate(escape_html(body)) if body else say(NO_TEXT)
    if ad["kind"] == "forward":
        origin = (
            say(FORWARDED_FROM, title=isolate(escape_html(str(ad["from"]))))
            if ad.get("from")
            else say(FORWARDED)
        )
        shown = f"{origin}\n{shown}"
    title = isolate(escape_html(str(slot["title"])))
    head = say(YOUR_AD, title=title, price=usdt(say, int(slot["price_micros"])))
    return f"{head}\n\n{shown}\n\n{say(REVIEW_QUESTION)}"


def _buttons(*rows: tuple[str, str]) -> dict[str, Any]:
    return {
        "inline_keyboard": [[{"text": text[:64], "callback_data": data}] for text, data in rows]
    }


def _cancel(say: Speech) -> tuple[str, str]:
    return say(CANCEL_LABEL), "ads:cancel"


class AdShop:
    """The bot's routes: `/start ads`, `/ads`, `ads:` presses and every other private message
    (a hash, the ad of a booking, or the default hint)."""

    def register(self, routes: Routes) -> None:
        routes.starts["ads"] = _Shop()
        routes.commands["/ads"] = _Shop()
        routes.callbacks["ads:"] = _Press()
        routes.messages = _Message()


class _Quiet:
    """Nothing to read from Telegram: everything happens in the transaction."""

    reads_telegram = False

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> None:
        return None


async def _slots(conn: Connection, bot_id: BotId) -> list[Slot]:
    cur = await conn.execute(Q["shop_slots"], {"bot_id": bot_id})
    return [Slot.from_row(row) for row in await cur.fetchall()]


class _Shop(_Quiet):
    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        slots = await _slots(conn, visit.update.bot_id)
        chat_id, say = visit.update.chat_key, visit.say
        markup = _buttons(
            *(
                (f"{isolate(slot.title)} · {usdt(say, slot.price_micros)}", f"ads:slot:{slot.id}")
                for slot in slots
            )
        )
        return [html_message(chat_id, shophtml_message(slots, say), markup if slots else None)]


class _Press(_Quiet):
    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        update, say = visit.update, visit.say
        if visit.person_id is None:
            return [callback_answer(update)]
        what, _, value = visit.arg.partition(":")
        number = int(value) if value.isascii() and value.isdigit() and len(value) < 10 else 0
        if what == "slot":
            return await self._slot(conn, visit, number)
        if what == "cancel":
            await end_step(conn, visit)
            return [
                callback_answer(update, say(CANCELLED)),
                html_message(update.chat_key, say(BOOKING_CANCELLED)),
            ]
        step = await read_step(conn, visit)
        if step is not None and step.expired:
            await end_step(conn, visit)
            return [callback_answer(update), html_message(update.chat_key, say(EXPIRED))]
        if what == "confirm":
            return await self._confirm(conn, visit, step)
        if what == "order":
            return await self._order(conn, visit, step, number)
        return [callback_answer(update)]

    async def _slot(self, conn: Connection, visit: Visit, slot_id: int) -> list[Reply]:
        update, say = visit.update, visit.say
        cur = await conn.execute(Q["shop_slot"], {"id": slot_id, "bot_id": update.bot_id})
        row = await cur.fetchone()
        if row is None:
            return [callback_answer(update, say(SLOT_GONE))]
        slot = Slot.from_row(row)
        data = {
            "slot_id": slot.id,
            "title": slot.title,
            "price_micros": slot.price_micros,
            "accepts_usdt": slot.accepts_usdt,
            "accepts_trx": slot.accepts_trx,
            "request_key": str(uuid.uuid4()),
        }
        await set_step(conn, visit, "ad", data, STEP_TTL)
        booking = say(
            BOOKING,
            title=isolate(escape_html(slot.title)),
            price=usdt(say, slot.price_micros),
            coins=slot.coins(say),
        )
        text = f"{booking}\n\n{say(SEND_AD)}"
        markup = _buttons(_cancel(say))
        return [callback_answer(update), html_message(update.chat_key, text, markup)]

    async def _confirm(self, conn: Connection, visit: Visit, step: Step | None) -> list[Reply]:
        update, say = visit.update, visit.say
        if step is None or step.name != "confirm":
            note = SEND_AD if step is not None and step.name == "ad" else NOTHING_TO_CONFIRM
            return [callback_answer(update, say(note)[:200])]
        data = step.data
        cur = await conn.execute(
            Q["insert_ad_order"],
            {
                "slot_id": data["slot_id"],
                "bot_id": update.bot_id,
                "person_id": visit.person_id,
                "ad": Jsonb(data["ad"]),
                "price_micros": data["price_micros"],
                "accepts_usdt": data["accepts_usdt"],
                "accepts_trx": data["accepts_trx"],
                "request_key": data["request_key"],
                "now": visit.now,
            },
        )
        row = await cur.fetchone()
        await end_step(conn, visit)
        if row is None:
            return [callback_answer(update), html_message(update.chat_key, say(NOT_BOOKED))]
        text = say(WITH_OWNER, order=number(row["id"]))
        answer = callback_answer(update, say(SENT_FOR_REVIEW))
        return [answer, html_message(update.chat_key, text)]

    async def _order(
        self, conn: Connection, visit: Visit, step: Step | None, order_id: int
    ) -> list[Reply]:
        update, say = visit.update, visit.say
        if step is None or step.name != "which_order":
            return [callback_answer(update, say(HASH_AGAIN))]
        orders = await _awaiting(conn, visit)
        chosen = next((o for o in orders if int(o["id"]) == order_id), None)
        await end_step(conn, visit)
        if chosen is None:
            return [callback_answer(update), html_message(update.chat_key, say(NOT_WAITING))]
        return [
            callback_answer(update),
            await _claim(conn, visit, str(step.data["tx_hash"]), chosen),
        ]


async def _awaiting(conn: Connection, visit: Visit) -> list[dict[str, Any]]:
    cur = await conn.execute(
        Q["orders_awaiting_payment"],
        {"person_id": visit.person_id, "bot_id": visit.update.bot_id, "now": visit.now},
    )
    return [dict(row) for row in await cur.fetchall()]


async def _claim(conn: Connection, visit: Visit, tx_hash: str, order: dict[str, Any]) -> Reply:
    chat_id = visit.update.chat_key
    cur = await conn.execute(
        Q["insert_tron_claim"], {"tx_hash": tx_hash, "order_id": order["id"], "now": visit.now}
    )
    if await cur.fetchone() is None:
        return html_message(chat_id, visit.say(ALREADY_SUBMITTED))
    text = visit.say(CHECKING, hash=short_hash(tx_hash), order=number(order["id"]))
    return html_message(chat_id, text)


class _Message(_Quiet):
    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        message = visit.update.body
        chat_id, say = visit.update.chat_key, visit.say
        if visit.person_id is None:
            return await default_reply(conn, visit.update.bot_id, message, visit.say)
        tx_hash = parse_hash(message.get("text"))
        if tx_hash is not None:
            return await self._hash(conn, visit, tx_hash)
        problem = hash_problem(message.get("text"), say)
        if problem is not None:
            return [html_message(chat_id, problem)]
        step = await read_step(conn, visit)
        if step is None:
            return await default_reply(conn, visit.update.bot_id, message, visit.say)
        if step.expired:
            await end_step(conn, visit)
            return [html_message(chat_id, say(EXPIRED))]
        if step.name in ("ad", "confirm"):
            ad = ad_of(message)
            if ad is None:
                return [html_message(chat_id, say(SEND_AD), _buttons(_cancel(say)))]
            await set_step(conn, visit, "confirm", {**step.data, "ad": ad}, STEP_TTL)
            markup = _buttons((say(SEND_FOR_REVIEW), "ads:confirm"), _cancel(say))
            return [html_message(chat_id, preview(step.data, ad, say), markup)]
        return [html_message(chat_id, say(USE_BUTTONS))]

    async def _hash(self, conn: Connection, visit: Visit, tx_hash: str) -> list[Reply]:
        chat_id, say = visit.update.chat_key, visit.say
        cur = await conn.execute(Q["claimed_hash"], {"tx_hash": tx_hash})
        if await cur.fetchone() is not None:
            return [html_message(chat_id, say(ALREADY_SUBMITTED))]
        orders = await _awaiting(conn, visit)
        if not orders:
            return [html_message(chat_id, say(NOTHING_WAITING))]
        if len(orders) == 1:
            return [await _claim(conn, visit, tx_hash, orders[0])]
        await set_step(conn, visit, "which_order", {"tx_hash": tx_hash}, STEP_TTL)
        rows = (
            (
                f"#{say.digits(o['id'])} {isolate(o['title'])} · "
                + say(LEFT, price=usdt(say, int(o["price_micros"]) - int(o["paid_micros"]))),
                f"ads:order:{o['id']}",
            )
            for o in orders
        )
        text = say(WHICH_ORDER, hash=short_hash(tx_hash))
        return [html_message(chat_id, text, _buttons(*rows))]
