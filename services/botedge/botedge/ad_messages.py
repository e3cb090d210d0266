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
from botedge.text import coins, escape_html, short_hash, usdt
from botedge.words import Speech, Words, isolate, msg, pick
from shared.db import Pool
from shared.units import decimal_text, sun_for

Q = sqlq.Q

AD_ORDER_EVENTS = EventTable("ad_order_events", ("order_id",))


THE_DEADLINE = msg("ad.the_deadline", "the deadline")
REASONS = {
    "not_found": msg(
        "ad.reason.not_found",
        "TRON has not known this transaction for 15 minutes. Check that you sent the right hash; "
        "if the payment is real, write to the owner with it.",
    ),
    "failed": msg("ad.reason.failed", "The transaction failed on chain, so nothing was paid."),
    "before_approval": msg(
        "ad.reason.before_approval",
        "The transaction was made before the order was approved, so it cannot pay for it.",
    ),
    "bad_body": msg("ad.reason.bad_body", "The transaction could not be read as a payment."),
    "not_approved": msg(
        "ad.reason.not_approved",
        "The order is not waiting for payment, so the transaction was not counted.",
    ),
}
NOT_COUNTED = msg("ad.reason.other", "It could not be counted as a payment.")
WRONG_RECIPIENT = msg(
    "ad.reason.wrong_recipient",
    "The coins went to <code>{went_to}</code>, not to the shop's address <code>{shop}</code>.",
)
ANOTHER_ADDRESS = msg("ad.another_address", "another address")
WRONG_TOKEN = msg(
    "ad.reason.wrong_token", "It moved a coin this order does not take: it takes {coins}."
)
TRX_WORTH = msg("ad.trx_worth", "{trx} TRX (worth {usdt})")
EITHER = msg("ad.either", "<b>{usdt}</b> or <b>{trx} TRX</b>")
APPROVED = msg("ad.approved", "Order {order} (<b>{title}</b>) is approved.")
PAY_ONE = msg("ad.pay_one", "Pay {amount} to")
PAY_EITHER = msg("ad.pay_either", "Pay {usdt} or {trx} to")
BY = msg("ad.by", "by {deadline}.")
THEN_HASH = msg(
    "ad.then_hash",
    "Then send me the transaction hash here. You may pay in parts: send each hash.",
)
CREDITED = msg(
    "ad.credited",
    "{amount} arrived for order {order}, which is no longer waiting for payment. The owner sees "
    "it and will settle it with you.",
)
PART_PAID = msg(
    "ad.part_paid",
    "{amount} arrived for order {order}: {paid} of {price} paid. {left} left to pay by "
    "{deadline}. Send the hash of the next payment here.",
)
PAID = msg(
    "ad.paid",
    "{amount} arrived: order {order} (<b>{title}</b>) is paid in full, {paid} of {price}. Thank "
    "you! The owner will publish your ad.",
)
REJECTED = msg(
    "ad.rejected", "Transaction <code>{hash}</code> was not accepted for order {order}. {why}"
)
REJECTED_NO_HASH = msg(
    "ad.rejected_no_hash", "Transaction was not accepted for order {order}. {why}"
)
WAITING = msg(
    "ad.claim_waiting",
    "TronGrid, which we check TRON payments with, is not answering right now. Transaction "
    "<code>{hash}</code> for order {order} is safe with us: we will check it as soon as TronGrid "
    "is back and tell you here. No need to send it again.",
)
REMINDER = msg(
    "ad.reminder",
    "Reminder: order {order} still needs {left} by {deadline}. Send the hash here once you pay.",
)
EXPIRED = msg(
    "ad.expired",
    "Order {order} has expired: it was not paid in full by the deadline. Send /ads to book again.",
)
EXPIRED_PAID = msg(
    "ad.expired_paid",
    "Order {order} has expired: it was not paid in full by the deadline. {paid} arrived; the "
    "owner will settle it with you. Send /ads to book again.",
)


def when(moment: dt.datetime | str | None, say: Speech) -> str:
    if moment is None:
        return say(THE_DEADLINE)
    if isinstance(moment, str):
        moment = dt.datetime.fromisoformat(moment)
    return say.moment(moment)


def _trx(say: Speech, sun: int) -> str:
    return say.digits(decimal_text(sun))


def _coin_amount(detail: dict[str, Any], say: Speech) -> str:
    amount = int(Decimal(str(detail.get("amount", "0"))))
    if detail.get("coin") == "trx":
        worth = usdt(say, int(detail.get("micros", 0)))
        return say(TRX_WORTH, trx=_trx(say, amount), usdt=worth)
    return usdt(say, amount)


def _left(order: dict[str, Any], left_micros: int, say: Speech) -> str:
    if order["accepts_trx"] and order["trx_rate"]:
        sun = sun_for(left_micros, Decimal(order["trx_rate"]))
        return say(EITHER, usdt=usdt(say, left_micros), trx=_trx(say, sun))
    return f"<b>{usdt(say, left_micros)}</b>"


def _approved(detail: dict[str, Any], order: dict[str, Any], say: Speech) -> dict[str, Any]:
    """The order's price in each coin it takes, the address as text and as a QR code."""
    price = int(order["price_micros"])
    title = isolate(escape_html(str(order["title"])))
    in_usdt = f"<b>{usdt(say, price)}</b> (TRC-20)" if order["accepts_usdt"] else None
    trx = None
    if order["accepts_trx"] and order["trx_rate"]:
        trx = f"<b>{_trx(say, sun_for(price, Decimal(order['trx_rate'])))} TRX</b>"
    if in_usdt and trx:
        pay = say(PAY_EITHER, usdt=in_usdt, trx=trx)
    else:
        pay = say(PAY_ONE, amount=in_usdt or trx or "")
    lines = [
        say(APPROVED, order=_order(order, say), title=title),
        "",
        pay,
        f"<code>{escape_html(str(order['pay_to']))}</code>",
        say(BY, deadline=when(detail.get("due_at") or order["due_at"], say)),
        "",
        say(THEN_HASH),
    ]
    return {
        "method": "sendPhoto",
        "caption": "\n".join(lines),
        "parse_mode": "HTML",
        **uploads.qr_photo(str(order["pay_to"])),
    }


def _order(order: dict[str, Any], say: Speech) -> str:
    return f"#{say.digits(order['id'])}"


def _why(detail: dict[str, Any], order: dict[str, Any], say: Speech) -> str:
    """Why a transaction was not counted, in the advertiser's terms."""
    reason = str(detail.get("reason") or "")
    if reason == "wrong_recipient":
        went = detail.get("detail")
        went_to = escape_html(str(went)) if went else say(ANOTHER_ADDRESS)
        return say(WRONG_RECIPIENT, went_to=went_to, shop=escape_html(str(order["pay_to"])))
    if reason == "wrong_token":
        taken = coins(say, order["accepts_usdt"], order["accepts_trx"])
        return say(WRONG_TOKEN, coins=taken)
    return say(REASONS.get(reason, NOT_COUNTED))


def event_message(
    kind: str, detail: dict[str, Any], order: dict[str, Any], say: Speech
) -> dict[str, Any] | None:
    """The message about one event (without `chat_id`): a `sendMessage` or a `sendPhoto`
    payload with its method under "method"; None when another event of the same cause says it
    (a credit that also made the order part paid or paid)."""
    number = _order(order, say)
    title = isolate(escape_html(str(order["title"])))
    price = int(order["price_micros"])
    paid = int(detail.get("paid_micros", order["paid_micros"]))
    if kind == "approved":
        return _approved(detail, order, say)
    if kind == "credited":
        if order["told_with_status"]:
            return None
        text = say(CREDITED, amount=_coin_amount(detail, say), order=number)
    elif kind == "part_paid":
        text = say(
            PART_PAID,
            amount=_coin_amount(detail, say),
            order=number,
            paid=usdt(say, paid),
            price=usdt(say, price),
            left=_left(order, max(0, price - paid), say),
            deadline=when(order["due_at"], say),
        )
    elif kind == "paid":
        text = say(
            PAID,
            amount=_coin_amount(detail, say),
            order=number,
            title=title,
            paid=usdt(say, paid),
            price=usdt(say, price),
        )
    elif kind == "claim_rejected":
        tx_hash = str(detail.get("tx_hash") or "")
        why = _why(detail, order, say)
        if tx_hash:
            text = say(REJECTED, hash=short_hash(tx_hash), order=number, why=why)
        else:
            text = say(REJECTED_NO_HASH, order=number, why=why)
    elif kind == "claim_waiting":
        shown = short_hash(str(detail.get("tx_hash") or ""))
        text = say(WAITING, hash=shown, order=number)
    elif kind == "reminder":
        left = int(detail.get("left_micros", price - int(order["paid_micros"])))
        deadline = when(detail.get("due_at") or order["due_at"], say)
        text = say(REMINDER, order=number, left=_left(order, left, say), deadline=deadline)
    elif kind == "expired":
        if paid:
            text = say(EXPIRED_PAID, order=number, paid=usdt(say, paid))
        else:
            text = say(EXPIRED, order=number)
    else:
        return None
    return {"method": "sendMessage", "text": text, "parse_mode": "HTML"}


class AdEvents:
    """`ad_order_events` -> one message each to the advertiser, through the order's bot. The
    message is queued under the event's key in the transaction that finishes the event: a
    consumer killed on the way leaves neither, and the next one queues it once."""

    def __init__(self, pool: Pool, queue: EventQueue, words: Words) -> None:
        self.pool = pool
        self.queue = queue
        self.words = words

    async def handle(self, event: Event) -> None:
        row = event.row
        async with connection(self.pool) as conn, conn.transaction():
            cur = await conn.execute(
                Q["ad_order_context"], {"order_id": row["order_id"], "cause": row["cause"]}
            )
            order = await cur.fetchone()
            message = None
            if order is not None:
                told = pick(order["chosen_language"], order["language_code"], order["bot_language"])
                say = self.words.speech(told, int(order["bot_id"]))
                made = event_message(str(row["kind"]), dict(row["detail"] or {}), dict(order), say)
                message = None if made is None else say.begun(made)
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
