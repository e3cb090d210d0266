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
from botedge.text import escape_html, short_hash, usdt
from botedge.updates import InboxRow
from shared.db import Connection

Q = sqlq.Q

STEP_TTL = dt.timedelta(hours=48)
PREVIEW_CHARS = 3000

_HASH = re.compile(r"(?:0[xX])?([0-9a-fA-F]{64})", re.ASCII)
# One word of letters and digits about a hash's length: meant as a hash, and not one.
_HASHLIKE = re.compile(r"(?:0[xX])?[0-9A-Za-z]{32,100}", re.ASCII)

NO_SLOTS = "No ad slots are on sale here right now."
EXPIRED = (
    "This request has expired: a booking waits 48 hours for its next step. "
    "Send /ads to start again."
)
NOTHING_WAITING = (
    "You have no ad order waiting for payment here. Book one with /ads; once the owner "
    "approves it, send the hash of your payment."
)
ALREADY_SUBMITTED = "This transaction was already submitted."
SEND_AD = "Send the ad as a text message, or forward the post you want published."


def parse_hash(text: Any) -> str | None:
    """A transaction hash as billing stores it (lower case, no 0x), or None."""
    if not isinstance(text, str):
        return None
    match = _HASH.fullmatch(text.strip())
    return match.group(1).lower() if match else None


def hash_problem(text: Any) -> str | None:
    """What is wrong with a message meant as a hash; None when it does not look like one."""
    if not isinstance(text, str) or not _HASHLIKE.fullmatch(text.strip()):
        return None
    word = text.strip()
    digits = word[2:] if word[:2] in ("0x", "0X") else word
    if not all(c in "0123456789abcdefABCDEF" for c in digits):
        return (
            "That is not a transaction hash: a hash has only the digits 0-9 and the letters "
            "a-f. Copy it from your wallet or from Tronscan and send it again."
        )
    if len(digits) != 64:
        return (
            f"That is not a transaction hash: a hash has 64 characters, this has {len(digits)}. "
            "Copy it whole and send it again."
        )
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

    @property
    def coins(self) -> str:
        if self.accepts_usdt and self.accepts_trx:
            return "USDT (TRC-20) or TRX"
        return "USDT (TRC-20)" if self.accepts_usdt else "TRX"


def shophtml_message(slots: list[Slot]) -> str:
    if not slots:
        return NO_SLOTS
    lines = [
        f"• <b>{escape_html(slot.title)}</b>: {usdt(slot.price_micros)}, paid in {slot.coins}"
        for slot in slots
    ]
    return "Ad slots in this bot:\n\n" + "\n".join(lines) + "\n\nChoose one to book it."


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


def preview(slot: dict[str, Any], ad: dict[str, Any]) -> str:
    body = str(ad.get("text") or "")
    if len(body) > PREVIEW_CHARS:
        body = body[:PREVIEW_CHARS] + "…"
    shown = escape_html(body) if body else "(no text)"
    if ad["kind"] == "forward":
        origin = f" from <b>{escape_html(str(ad['from']))}</b>" if ad.get("from") else ""
        shown = f"A forwarded post{origin}:\n{shown}"
    return (
        f"Your ad for <b>{escape_html(str(slot['title']))}</b>, "
        f"{usdt(int(slot['price_micros']))}:\n\n{shown}\n\n"
        "Send it to the owner for review? You can also send another text to replace it."
    )


def _buttons(*rows: tuple[str, str]) -> dict[str, Any]:
    return {
        "inline_keyboard": [[{"text": text[:64], "callback_data": data}] for text, data in rows]
    }


CANCEL = ("Cancel", "ads:cancel")


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
        chat_id = visit.update.chat_key
        markup = _buttons(
            *(
                (f"{slot.title} · {usdt(slot.price_micros)}", f"ads:slot:{slot.id}")
                for slot in slots
            )
        )
        return [html_message(chat_id, shophtml_message(slots), markup if slots else None)]


class _Press(_Quiet):
    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        update = visit.update
        if visit.person_id is None:
            return [callback_answer(update)]
        what, _, value = visit.arg.partition(":")
        number = int(value) if value.isascii() and value.isdigit() and len(value) < 10 else 0
        if what == "slot":
            return await self._slot(conn, visit, number)
        if what == "cancel":
            await end_step(conn, visit)
            return [
                callback_answer(update, "Cancelled"),
                html_message(update.chat_key, "Booking cancelled."),
            ]
        step = await read_step(conn, visit)
        if step is not None and step.expired:
            await end_step(conn, visit)
            return [callback_answer(update), html_message(update.chat_key, EXPIRED)]
        if what == "confirm":
            return await self._confirm(conn, visit, step)
        if what == "order":
            return await self._order(conn, visit, step, number)
        return [callback_answer(update)]

    async def _slot(self, conn: Connection, visit: Visit, slot_id: int) -> list[Reply]:
        update = visit.update
        cur = await conn.execute(Q["shop_slot"], {"id": slot_id, "bot_id": update.bot_id})
        row = await cur.fetchone()
        if row is None:
            return [callback_answer(update, "That slot is no longer on sale.")]
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
        text = (
            f"Booking <b>{escape_html(slot.title)}</b> for {usdt(slot.price_micros)}, "
            f"paid in {slot.coins}.\n\n{SEND_AD}"
        )
        return [callback_answer(update), html_message(update.chat_key, text, _buttons(CANCEL))]

    async def _confirm(self, conn: Connection, visit: Visit, step: Step | None) -> list[Reply]:
        update = visit.update
        if step is None or step.name != "confirm":
            note = SEND_AD if step is not None and step.name == "ad" else "Nothing to confirm."
            return [callback_answer(update, note[:200])]
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
            text = "That slot is no longer on sale, so nothing was booked. See /ads for others."
            return [callback_answer(update), html_message(update.chat_key, text)]
        text = (
            f"Order #{row['id']} is with the owner for review. Once it is approved, you will "
            "get the address and the amount to pay here."
        )
        return [callback_answer(update, "Sent for review"), html_message(update.chat_key, text)]

    async def _order(
        self, conn: Connection, visit: Visit, step: Step | None, order_id: int
    ) -> list[Reply]:
        update = visit.update
        if step is None or step.name != "which_order":
            return [callback_answer(update, "Send the transaction hash again.")]
        orders = await _awaiting(conn, visit)
        chosen = next((o for o in orders if int(o["id"]) == order_id), None)
        await end_step(conn, visit)
        if chosen is None:
            text = "That order is no longer waiting for payment."
            return [callback_answer(update), html_message(update.chat_key, text)]
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
        return html_message(chat_id, ALREADY_SUBMITTED)
    text = (
        f"Checking transaction <code>{short_hash(tx_hash)}</code> for order #{order['id']}. "
        "I will write here once it is confirmed on TRON, usually within a few minutes."
    )
    return html_message(chat_id, text)


class _Message(_Quiet):
    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        message = visit.update.body
        chat_id = visit.update.chat_key
        if visit.person_id is None:
            return await default_reply(conn, visit.update.bot_id, message, visit.say)
        tx_hash = parse_hash(message.get("text"))
        if tx_hash is not None:
            return await self._hash(conn, visit, tx_hash)
        problem = hash_problem(message.get("text"))
        if problem is not None:
            return [html_message(chat_id, problem)]
        step = await read_step(conn, visit)
        if step is None:
            return await default_reply(conn, visit.update.bot_id, message, visit.say)
        if step.expired:
            await end_step(conn, visit)
            return [html_message(chat_id, EXPIRED)]
        if step.name in ("ad", "confirm"):
            ad = ad_of(message)
            if ad is None:
                return [html_message(chat_id, SEND_AD, _buttons(CANCEL))]
            await set_step(conn, visit, "confirm", {**step.data, "ad": ad}, STEP_TTL)
            markup = _buttons(("Send for review", "ads:confirm"), CANCEL)
            return [html_message(chat_id, preview(step.data, ad), markup)]
        return [
            html_message(chat_id, "Choose one of the buttons above, or send /ads to start over.")
        ]

    async def _hash(self, conn: Connection, visit: Visit, tx_hash: str) -> list[Reply]:
        chat_id = visit.update.chat_key
        cur = await conn.execute(Q["claimed_hash"], {"tx_hash": tx_hash})
        if await cur.fetchone() is not None:
            return [html_message(chat_id, ALREADY_SUBMITTED)]
        orders = await _awaiting(conn, visit)
        if not orders:
            return [html_message(chat_id, NOTHING_WAITING)]
        if len(orders) == 1:
            return [await _claim(conn, visit, tx_hash, orders[0])]
        await set_step(conn, visit, "which_order", {"tx_hash": tx_hash}, STEP_TTL)
        rows = (
            (
                f"#{o['id']} {o['title']} · "
                f"{usdt(int(o['price_micros']) - int(o['paid_micros']))} left",
                f"ads:order:{o['id']}",
            )
            for o in orders
        )
        text = f"Which order does <code>{short_hash(tx_hash)}</code> pay for?"
        return [html_message(chat_id, text, _buttons(*rows))]
