"""The advertiser's messages about an ad order: one per `ad_order_events` row billing writes
(approved with the address and a QR code, each payment counted or refused, a reminder, the
expiry), queued through the order's bot in the transaction that finishes the event."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from botedge import outbox_store, sqlq, uploads
from botedge.db import connection
from botedge.events import Event, EventQueue, EventTable
from botedge.ids import BotId
from botedge.text import escape_html, short_hash, usdt
from shared.db import Pool
from shared.units import decimal_text, sun_for

Q = sqlq.Q

AD_ORDER_EVENTS = EventTable("ad_order_events", ("order_id",))


def when(moment: dt.datetime | str | None) -> str:
    if moment is None:
        return "the deadline"
    if isinstance(moment, str):
        moment = dt.datetime.fromisoformat(moment)
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


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


def _approved(detail: dict[str, Any], order: dict[str, Any]) -> dict[str, Any]:
    """The order's price in each coin it takes, the address as text and as a QR code."""
    price = int(order["price_micros"])
    lines = [f"Order #{order['id']} (<b>{escape_html(str(order['title']))}</b>) is approved."]
    amounts = []
    if order["accepts_usdt"]:
        amounts.append(f"<b>{usdt(price)}</b> (TRC-20)")
    if order["accepts_trx"] and order["trx_rate"]:
        sun = sun_for(price, Decimal(order["trx_rate"]))
        amounts.append(f"<b>{decimal_text(sun)} TRX</b>")
    lines += [
        "",
        "Pay " + " or ".join(amounts) + " to",
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


def _why(detail: dict[str, Any], order: dict[str, Any]) -> str:
    """Why a transaction was not counted, in the advertiser's terms."""
    reason = str(detail.get("reason") or "")
    if reason == "wrong_recipient":
        went_to = escape_html(str(detail.get("detail") or "another address"))
        return (
            f"The coins went to <code>{went_to}</code>, not to the shop's address "
            f"<code>{escape_html(str(order['pay_to']))}</code>."
        )
    if reason == "wrong_token":
        taken = (("USDT (TRC-20)", order["accepts_usdt"]), ("TRX", order["accepts_trx"]))
        coins = " or ".join(coin for coin, on in taken if on)
        return f"It moved a coin this order does not take: it takes {coins}."
    return REASONS.get(reason, "It could not be counted as a payment.")


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
        return _approved(detail, order)
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
        shown = f" <code>{short_hash(tx_hash)}</code>" if tx_hash else ""
        text = f"Transaction{shown} was not accepted for order {number}. {_why(detail, order)}"
    elif kind == "claim_waiting":
        shown = short_hash(str(detail.get("tx_hash") or ""))
        text = (
            f"TronGrid, which we check TRON payments with, is not answering right now. "
            f"Transaction <code>{shown}</code> for order {number} is safe with us: we will check "
            "it as soon as TronGrid is back and tell you here. No need to send it again."
        )
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
                    BotId(int(order["bot_id"])),
                    user,
                    method,
                    {"chat_id": user, **message},
                    key=f"ad_event:{event.id}",
                )
            await self.queue.finish(conn, event)
