"""The ad shop in the bot: booking an ad, paying for it with a TRON transaction hash, and the
advertiser's messages about the order.

- `/start ads` or `/ads` lists the bot's slots. Booking is three steps: a slot (button), the
  ad (a text or a forwarded post), confirm (button), which writes the `ad_orders` row
  `requested`. The step lives in `conversations`, 48 hours; a row past that is kept to say
  "expired" rather than "never started".
- A message that is a transaction hash (64 hex characters, `0x` optional) becomes a
  `tron_claims` row for the person's order awaiting payment; billing checks it on chain. With
  several such orders the person picks one (the hash waits in the conversation: a button's
  data is too short for it). A hash's unique key makes it pay one order once.
- `ad_order_events` from billing, one message each to the advertiser (`AdEvents`).

Everything here runs inside the update's (or the event's) transaction: no network call.
Texts go out with parse_mode=HTML; what people or owners wrote is escaped.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from psycopg.types.json import Jsonb

from botedge import outbox_store, sqlq, uploads
from botedge.db import connection
from botedge.events import Event, EventQueue, EventTable
from botedge.handlers import Context, Routes, Visit, default_reply
from botedge.ids import ChatId
from botedge.inbox_store import InboxRow
from botedge.outbox_store import Reply
from botedge.text import escape_html
from shared.db import Connection, Pool
from shared.units import decimal_text, sun_for

Q = sqlq.Q

AD_ORDER_EVENTS = EventTable("ad_order_events", ("order_id",))
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


def short_hash(tx_hash: str) -> str:
    return f"{tx_hash[:8]}…{tx_hash[-6:]}"


def when(moment: dt.datetime | str | None) -> str:
    if moment is None:
        return "the deadline"
    if isinstance(moment, str):
        moment = dt.datetime.fromisoformat(moment)
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def usdt(micros: int) -> str:
    return f"{decimal_text(micros)} USDT"


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


@dataclass(frozen=True)
class Step:
    name: str
    data: dict[str, Any]
    expired: bool


def shop_text(slots: list[Slot]) -> str:
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


def _text(chat_id: ChatId, text: str, markup: dict[str, Any] | None = None) -> Reply:
    payload: dict[str, Any] = {"chat_id": chat_id, "text": text, "parse_mode": "HTML"}
    if markup:
        payload["reply_markup"] = markup
    return Reply(chat_id, "sendMessage", payload)


def _answer(update: InboxRow, note: str | None = None) -> Reply:
    payload: dict[str, Any] = {"callback_query_id": str(update.body.get("id", ""))}
    if note:
        payload["text"] = note
    return Reply(update.chat_key, "answerCallbackQuery", payload)


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


async def _step(conn: Connection, visit: Visit) -> Step | None:
    cur = await conn.execute(
        Q["conversation"], {"bot_id": visit.update.bot_id, "person_id": visit.person_id}
    )
    row = await cur.fetchone()
    if row is None:
        return None
    return Step(str(row["step"]), dict(row["data"]), row["expires_at"] <= visit.now)


async def _set_step(conn: Connection, visit: Visit, step: str, data: dict[str, Any]) -> None:
    await conn.execute(
        Q["set_conversation"],
        {
            "bot_id": visit.update.bot_id,
            "person_id": visit.person_id,
            "step": step,
            "data": Jsonb(data),
            "expires_at": visit.now + STEP_TTL,
            "now": visit.now,
        },
    )


async def _end(conn: Connection, visit: Visit) -> None:
    await conn.execute(
        Q["end_conversation"], {"bot_id": visit.update.bot_id, "person_id": visit.person_id}
    )


async def _slots(conn: Connection, bot_id: int) -> list[Slot]:
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
        return [_text(chat_id, shop_text(slots), markup if slots else None)]


class _Press(_Quiet):
    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        update = visit.update
        if visit.person_id is None:
            return [_answer(update)]
        what, _, value = visit.arg.partition(":")
        number = int(value) if value.isascii() and value.isdigit() and len(value) < 10 else 0
        if what == "slot":
            return await self._slot(conn, visit, number)
        if what == "cancel":
            await _end(conn, visit)
            return [_answer(update, "Cancelled"), _text(update.chat_key, "Booking cancelled.")]
        step = await _step(conn, visit)
        if step is not None and step.expired:
            await _end(conn, visit)
            return [_answer(update), _text(update.chat_key, EXPIRED)]
        if what == "confirm":
            return await self._confirm(conn, visit, step)
        if what == "order":
            return await self._order(conn, visit, step, number)
        return [_answer(update)]

    async def _slot(self, conn: Connection, visit: Visit, slot_id: int) -> list[Reply]:
        update = visit.update
        cur = await conn.execute(Q["shop_slot"], {"id": slot_id, "bot_id": update.bot_id})
        row = await cur.fetchone()
        if row is None:
            return [_answer(update, "That slot is no longer on sale.")]
        slot = Slot.from_row(row)
        data = {
            "slot_id": slot.id,
            "title": slot.title,
            "price_micros": slot.price_micros,
            "accepts_usdt": slot.accepts_usdt,
            "accepts_trx": slot.accepts_trx,
            "request_key": str(uuid.uuid4()),
        }
        await _set_step(conn, visit, "ad", data)
        text = (
            f"Booking <b>{escape_html(slot.title)}</b> for {usdt(slot.price_micros)}, "
            f"paid in {slot.coins}.\n\n{SEND_AD}"
        )
        return [_answer(update), _text(update.chat_key, text, _buttons(CANCEL))]

    async def _confirm(self, conn: Connection, visit: Visit, step: Step | None) -> list[Reply]:
        update = visit.update
        if step is None or step.name != "confirm":
            note = SEND_AD if step is not None and step.name == "ad" else "Nothing to confirm."
            return [_answer(update, note[:200])]
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
        await _end(conn, visit)
        if row is None:
            text = "That slot is no longer on sale, so nothing was booked. See /ads for others."
            return [_answer(update), _text(update.chat_key, text)]
        text = (
            f"Order #{row['id']} is with the owner for review. Once it is approved, you will "
            "get the address and the amount to pay here."
        )
        return [_answer(update, "Sent for review"), _text(update.chat_key, text)]

    async def _order(
        self, conn: Connection, visit: Visit, step: Step | None, order_id: int
    ) -> list[Reply]:
        update = visit.update
        if step is None or step.name != "which_order":
            return [_answer(update, "Send the transaction hash again.")]
        orders = await _awaiting(conn, visit)
        chosen = next((o for o in orders if int(o["id"]) == order_id), None)
        await _end(conn, visit)
        if chosen is None:
            text = "That order is no longer waiting for payment."
            return [_answer(update), _text(update.chat_key, text)]
        return [_answer(update), await _claim(conn, visit, str(step.data["tx_hash"]), chosen)]


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
        return _text(chat_id, ALREADY_SUBMITTED)
    text = (
        f"Checking transaction <code>{short_hash(tx_hash)}</code> for order #{order['id']}. "
        "I will write here once it is confirmed on TRON, usually within a few minutes."
    )
    return _text(chat_id, text)


class _Message(_Quiet):
    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        message = visit.update.body
        chat_id = visit.update.chat_key
        if visit.person_id is None:
            return default_reply(message)
        tx_hash = parse_hash(message.get("text"))
        if tx_hash is not None:
            return await self._hash(conn, visit, tx_hash)
        problem = hash_problem(message.get("text"))
        if problem is not None:
            return [_text(chat_id, problem)]
        step = await _step(conn, visit)
        if step is None:
            return default_reply(message)
        if step.expired:
            await _end(conn, visit)
            return [_text(chat_id, EXPIRED)]
        if step.name in ("ad", "confirm"):
            ad = ad_of(message)
            if ad is None:
                return [_text(chat_id, SEND_AD, _buttons(CANCEL))]
            await _set_step(conn, visit, "confirm", {**step.data, "ad": ad})
            markup = _buttons(("Send for review", "ads:confirm"), CANCEL)
            return [_text(chat_id, preview(step.data, ad), markup)]
        return [_text(chat_id, "Choose one of the buttons above, or send /ads to start over.")]

    async def _hash(self, conn: Connection, visit: Visit, tx_hash: str) -> list[Reply]:
        chat_id = visit.update.chat_key
        cur = await conn.execute(Q["claimed_hash"], {"tx_hash": tx_hash})
        if await cur.fetchone() is not None:
            return [_text(chat_id, ALREADY_SUBMITTED)]
        orders = await _awaiting(conn, visit)
        if not orders:
            return [_text(chat_id, NOTHING_WAITING)]
        if len(orders) == 1:
            return [await _claim(conn, visit, tx_hash, orders[0])]
        await _set_step(conn, visit, "which_order", {"tx_hash": tx_hash})
        rows = (
            (
                f"#{o['id']} {o['title']} · "
                f"{usdt(int(o['price_micros']) - int(o['paid_micros']))} left",
                f"ads:order:{o['id']}",
            )
            for o in orders
        )
        text = f"Which order does <code>{short_hash(tx_hash)}</code> pay for?"
        return [_text(chat_id, text, _buttons(*rows))]


# -- the advertiser's messages about an order --------------------------------------------------


REASONS = {
    "not_found": "TRON has not known this transaction for 15 minutes. Check that you sent the "
    "right hash; if the payment is real, write to the owner with it.",
    "failed": "The transaction failed on chain, so nothing was paid.",
    "before_approval": "The transaction was made before the order was approved, so it cannot "
    "pay for it.",
    "bad_body": "The transaction could not be read as a payment.",
    "not_approved": "The order is not waiting for payment, so the transaction was not counted.",
}


def _coin_amount(detail: dict[str, Any]) -> str:
    amount = int(Decimal(str(detail.get("amount", "0"))))
    if detail.get("coin") == "trx":
        return f"{decimal_text(amount)} TRX (worth {usdt(int(detail.get('micros', 0)))})"
    return usdt(amount)


def _left(order: dict[str, Any], left_micros: int) -> str:
    text = f"<b>{usdt(left_micros)}</b>"
    if order["accepts_trx"] and order["trx_rate"]:
        text += f" or <b>{decimal_text(sun_for(left_micros, Decimal(order['trx_rate'])))} TRX</b>"
    return text


def event_message(
    kind: str, detail: dict[str, Any], order: dict[str, Any]
) -> dict[str, Any] | None:
    """The message about one event (without `chat_id`): a `sendMessage` or a `sendPhoto`
    payload with its method under "method"; None when another event of the same cause says it
    (a credit that also made the order part paid or paid)."""
    number = f"#{order['id']}"
    title = escape_html(str(order["title"]))
    price = int(order["price_micros"])
    if kind == "approved":
        lines = [f"Order {number} (<b>{title}</b>) is approved.", "", "Pay"]
        amounts = []
        if order["accepts_usdt"]:
            amounts.append(f"<b>{usdt(price)}</b> (TRC-20)")
        if order["accepts_trx"] and order["trx_rate"]:
            sun = sun_for(price, Decimal(order["trx_rate"]))
            amounts.append(f"<b>{decimal_text(sun)} TRX</b>")
        lines[-1] += " " + " or ".join(amounts) + " to"
        lines += [
            f"<code>{escape_html(str(order['pay_to']))}</code>",
            f"by {when(detail.get('due_at') or order['due_at'])}.",
            "",
            "Then send me the transaction hash here. You may pay in parts: send each hash.",
        ]
        return {
            "method": "sendPhoto",
            "caption": "\n".join(lines),
            "parse_mode": "HTML",
            **uploads.qr_photo(str(order["pay_to"])),
        }
    if kind == "credited":
        if order["told_with_status"]:
            return None
        text = (
            f"{_coin_amount(detail)} arrived for order {number}, which is no longer waiting for "
            "payment. The owner sees it and will settle it with you."
        )
    elif kind == "part_paid":
        paid = int(detail.get("paid_micros", order["paid_micros"]))
        text = (
            f"{_coin_amount(detail)} arrived for order {number}: {usdt(paid)} of {usdt(price)} "
            f"paid. {_left(order, max(0, price - paid))} left to pay by "
            f"{when(order['due_at'])}. Send the hash of the next payment here."
        )
    elif kind == "paid":
        paid = int(detail.get("paid_micros", order["paid_micros"]))
        text = (
            f"{_coin_amount(detail)} arrived: order {number} (<b>{title}</b>) is paid in full, "
            f"{usdt(paid)} of {usdt(price)}. Thank you! The owner will publish your ad."
        )
    elif kind == "claim_rejected":
        tx_hash = str(detail.get("tx_hash") or "")
        reason = str(detail.get("reason") or "")
        if reason == "wrong_recipient":
            went_to = escape_html(str(detail.get("detail") or "another address"))
            why = (
                f"The coins went to <code>{went_to}</code>, not to the shop's address "
                f"<code>{escape_html(str(order['pay_to']))}</code>."
            )
        elif reason == "wrong_token":
            coins = " or ".join(
                c
                for c, on in (
                    ("USDT (TRC-20)", order["accepts_usdt"]),
                    ("TRX", order["accepts_trx"]),
                )
                if on
            )
            why = f"It moved a coin this order does not take: it takes {coins}."
        else:
            why = REASONS.get(reason, "It could not be counted as a payment.")
        shown = f" <code>{short_hash(tx_hash)}</code>" if tx_hash else ""
        text = f"Transaction{shown} was not accepted for order {number}. {why}"
    elif kind == "reminder":
        left = int(detail.get("left_micros", price - int(order["paid_micros"])))
        text = (
            f"Reminder: order {number} still needs {_left(order, left)} by "
            f"{when(detail.get('due_at') or order['due_at'])}. Send the hash here once you pay."
        )
    elif kind == "expired":
        paid = int(detail.get("paid_micros", order["paid_micros"]))
        text = f"Order {number} has expired: it was not paid in full by the deadline."
        if paid:
            text += f" {usdt(paid)} arrived; the owner will settle it with you."
        text += " Send /ads to book again."
    else:
        return None
    return {"method": "sendMessage", "text": text, "parse_mode": "HTML"}


class AdEvents:
    """`ad_order_events` -> one message each to the advertiser, through the order's bot. The
    message is queued under the event's key in the transaction that finishes the event: a
    consumer killed on the way leaves neither, and the next one queues it once."""

    def __init__(self, pool: Pool, queue: EventQueue) -> None:
        self.pool = pool
        self.queue = queue

    async def handle(self, event: Event) -> None:
        row = event.row
        async with connection(self.pool) as conn, conn.transaction():
            cur = await conn.execute(
                Q["ad_order_context"], {"order_id": row["order_id"], "cause": row["cause"]}
            )
            order = await cur.fetchone()
            message = (
                event_message(str(row["kind"]), dict(row["detail"] or {}), dict(order))
                if order is not None
                else None
            )
            if message is not None and order is not None:
                user = int(order["telegram_user_id"])
                method = message.pop("method")
                await outbox_store.queue_reply(
                    conn,
                    int(order["bot_id"]),
                    user,
                    method,
                    {"chat_id": user, **message},
                    key=f"ad_event:{event.id}",
                )
            await self.queue.finish(conn, event)
