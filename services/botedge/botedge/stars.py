"""Telegram Stars at the edge: the pre-checkout answered at intake, each `successful_payment`
recorded for billing, and a subscription's renewal cancelled or reported.

Telegram gives a bot 10 seconds to answer a `pre_checkout_query`. A worker takes a person's
updates in order, so a query queued behind thousands of others could miss that; it is answered
where it comes in instead (the webhook API and the poller), after asking billing whether the
invoice may be paid, and only then stored, for the record. The `successful_payment` message
that follows joins the person's queue as usual: the worker writes it to `telegram_payments` in
the update's transaction, and billing's loop applies it (see `billing/stars.py`).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botedge import sqlq
from botedge.billing_client import BillingClient
from botedge.db import connection
from botedge.errors import RetryLater
from botedge.events import Event, EventQueue, EventTable
from botedge.metrics import PRE_CHECKOUT_SECONDS, PRE_CHECKOUTS
from botedge.outbox_store import Reply
from botedge.routing import (
    THE_CHANNEL,
    Context,
    Routes,
    Visit,
    callback_answer,
    html_message,
)
from botedge.telegram import BadRequest, BotApi, ServerError, TelegramError, TooManyRequests
from botedge.text import escape_html
from botedge.updates import InboxRow, Incoming
from botedge.words import SOURCE, Msg, Words, isolate, msg, number, pick
from shared.db import Connection, Pool

log = logging.getLogger("botedge.stars")
Q = sqlq.Q

# billing's reasons (`billing/stars.py`), in the person's words.
REFUSED = {
    "unknown": msg(
        "stars.refused.unknown",
        "This invoice is not one of ours. Open the channel's pay link in the bot again.",
    ),
    "not-yours": msg(
        "stars.refused.not_yours",
        "This invoice was made for someone else. Ask the bot for your own.",
    ),
    "paid": msg("stars.refused.paid", "This invoice is paid already."),
    "expired": msg("stars.refused.expired", "This invoice has expired. Ask the bot for a new one."),
    "amount": msg(
        "stars.refused.amount", "The price of this invoice has changed. Ask the bot for a new one."
    ),
    "currency": msg(
        "stars.refused.currency",
        "This invoice is paid in Telegram Stars (XTR) only. Ask the bot for a new one.",
    ),
}
UNAVAILABLE = msg(
    "stars.unavailable",
    "Payments are briefly unavailable. Nothing was charged; please try again shortly.",
)
SUBSCRIBED = msg(
    "stars.subscribed",
    "Subscribed to <b>{title}</b>: Telegram renews it every 30 days for {amount} ⭐ until you "
    "cancel. Your invite link comes here in a moment.",
)
CANCEL_RENEWAL = msg("stars.cancel_renewal", "Cancel renewal")
NOT_CHANGED = msg("stars.not_changed", "{why}: nothing was changed.")
TELEGRAM_REFUSED = msg("stars.telegram_refused", "Telegram refused")
NO_SUCH = msg("stars.no_such", "No such subscription of yours")
RENEWAL_CANCELLED = msg(
    "stars.renewal_cancelled",
    "Renewal cancelled: no more Stars are taken for <b>{title}</b>. Your access runs to "
    "{until}, as paid.",
)
RENEWAL_CANCELLED_OPEN = msg(
    "stars.renewal_cancelled_open",
    "Renewal cancelled: no more Stars are taken for <b>{title}</b>. Your access runs, as paid.",
)
# Within Telegram's 10 s, with room for the answer itself.
BILLING_TIMEOUT = 4.0
ANSWER_TIMEOUT = 4.0
CANCEL = "stars:cancel:"


class PreCheckout:
    """Answers a `pre_checkout_query` before it is stored."""

    def __init__(self, api: BotApi, billing: BillingClient, words: Words) -> None:
        self.api = api
        self.billing = billing
        self.words = words

    async def answer(self, token: str, incoming: Incoming) -> None:
        query = incoming.payload.get("pre_checkout_query") or {}
        started = time.perf_counter()
        refusal = await self._refusal(query)
        # Asked before the update is stored: Telegram's language for the person decides.
        told = (query.get("from") or {}).get("language_code")
        say = self.words.speech(pick(None, told if isinstance(told, str) else None, SOURCE))
        error_message = None if refusal is None else say(refusal)
        answer: dict[str, Any] = {
            "pre_checkout_query_id": str(query.get("id", "")),
            "ok": error_message is None,
        }
        if error_message is not None:
            answer["error_message"] = error_message
        try:
            await self.api.call(token, "answerPreCheckoutQuery", answer, timeout=ANSWER_TIMEOUT)
        except TelegramError as error:
            # Too late or refused: Telegram fails the payment itself, and nothing was charged.
            log.warning("pre-checkout %s: the answer failed: %s", query.get("id"), error)
            PRE_CHECKOUTS.labels("unanswered").inc()
            return
        took = time.perf_counter() - started
        PRE_CHECKOUTS.labels("ok" if error_message is None else "refused").inc()
        PRE_CHECKOUT_SECONDS.observe(took)
        log.info(
            "pre-checkout %s answered %s in %.3f s",
            query.get("id"),
            "ok" if error_message is None else "refused",
            took,
        )

    async def _refusal(self, query: dict[str, Any]) -> Msg | None:
        """None when billing says the invoice may be paid; else what the person reads."""
        sender = (query.get("from") or {}).get("id")
        payload, currency = query.get("invoice_payload"), query.get("currency")
        amount = query.get("total_amount")
        if not (
            isinstance(sender, int)
            and isinstance(payload, str)
            and isinstance(currency, str)
            and isinstance(amount, int)
            and not isinstance(amount, bool)
        ):
            return REFUSED["unknown"]
        try:
            reason = await self.billing.pre_checkout(
                sender, payload, currency, amount, timeout=BILLING_TIMEOUT
            )
        except RetryLater as error:
            log.warning("pre-checkout %s: billing did not answer: %s", query.get("id"), error)
            return UNAVAILABLE
        return None if reason is None else REFUSED.get(reason, REFUSED["unknown"])


@dataclass(frozen=True)
class Recorded:
    payment_id: int | None
    subscription_id: int | None
    subscription_made: bool
    title: str | None


def _readable(visit: Visit, what: str) -> dict[str, Any] | None:
    """The message's `successful_payment` or `refunded_payment` when it names a charge and a
    whole amount, from a person we know; None (logged, the update kept) otherwise."""
    found = visit.update.body.get(what)
    found = found if isinstance(found, dict) else {}
    charge = found.get("telegram_payment_charge_id")
    amount = found.get("total_amount")
    if (
        visit.person_id is None
        or not isinstance(charge, str)
        or not charge
        or not isinstance(amount, int)
        or isinstance(amount, bool)
        or amount < 0
    ):
        log.warning("update %d: a %s we cannot read; kept in the inbox", visit.update.id, what)
        return None
    return found


def _epoch(value: Any) -> dt.datetime | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return dt.datetime.fromtimestamp(value, dt.UTC)
    return None


class Stars:
    """The worker's Stars routes."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    def register(self, routes: Routes) -> None:
        routes.kinds["pre_checkout_query"] = _Answered()
        routes.kinds["successful_payment"] = _Paid()
        routes.kinds["refunded_payment"] = _Refunded()
        routes.kinds["subscription"] = _SubscriptionChanged()
        routes.callbacks["stars:"] = _CancelPress(self.pool)


class _Answered:
    """Answered at intake; stored for the record, nothing more to do."""

    reads_telegram = False

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> None:
        return None

    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        return []


class _Paid:
    """A `successful_payment`, the first or a renewal: kept for billing once per charge (the
    same payment in another update writes nothing), a subscription's renewal date moved."""

    reads_telegram = False

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> None:
        return None

    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        update = visit.update
        paid = _readable(visit, "successful_payment")
        if paid is None:
            return []
        charge, amount = paid["telegram_payment_charge_id"], paid["total_amount"]
        recurring = paid.get("is_recurring") is True
        cur = await conn.execute(
            Q["record_star_payment"],
            {
                "bot_id": update.bot_id,
                "person_id": visit.person_id,
                "payload": str(paid.get("invoice_payload") or ""),
                "currency": str(paid.get("currency") or ""),
                "total_amount": amount,
                "charge_id": charge,
                "provider_charge_id": paid.get("provider_payment_charge_id") or None,
                "is_recurring": recurring,
                "is_first_recurring": paid.get("is_first_recurring") is True,
                "expiration": _epoch(paid.get("subscription_expiration_date")),
                "paid_at": _epoch(update.body.get("date")) or visit.now,
                "now": visit.now,
            },
        )
        row = await cur.fetchone()
        if row is None or row["payment_id"] is None or not row["subscription_made"]:
            # A one-off payment, a renewal or a repeat: billing's access message says the rest.
            return []
        say = visit.say
        title = isolate(escape_html(str(row["title"]))) if row["title"] else say(THE_CHANNEL)
        text = say(SUBSCRIBED, title=title, amount=number(amount))
        data = f"{CANCEL}{row['subscription_id']}"
        button = {"text": say(CANCEL_RENEWAL), "callback_data": data}
        return [html_message(update.chat_key, text, {"inline_keyboard": [[button]]})]


class _Refunded:
    """Telegram's `refunded_payment` (after our `refundStarPayment`, or one Telegram made):
    kept for billing once per charge, which takes back what the payment bought."""

    reads_telegram = False

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> None:
        return None

    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        update = visit.update
        refunded = _readable(visit, "refunded_payment")
        if refunded is None:
            return []
        charge, amount = refunded["telegram_payment_charge_id"], refunded["total_amount"]
        await conn.execute(
            Q["record_star_refund"],
            {
                "bot_id": update.bot_id,
                "person_id": visit.person_id,
                "payload": str(refunded.get("invoice_payload") or ""),
                "currency": str(refunded.get("currency") or ""),
                "total_amount": amount,
                "charge_id": charge,
                "provider_charge_id": refunded.get("provider_payment_charge_id") or None,
                "paid_at": _epoch(update.body.get("date")) or visit.now,
                "now": visit.now,
            },
        )
        return []


STAR_REFUNDS = EventTable("star_refund_requests", ("payment_id",))


class StarRefunds:
    """The owner's refunds of Stars payments (`star_refund_requests`, from billing), each made
    with `refundStarPayment` through the bot that took the payment. A charge Telegram says is
    refunded already counts as done. Telegram's `refunded_payment` message follows, and that
    is what billing applies."""

    def __init__(
        self, pool: Pool, api: BotApi, tokens: Callable[[int], str | None], queue: EventQueue
    ) -> None:
        self.pool = pool
        self.api = api
        self.tokens = tokens
        self.queue = queue

    async def handle(self, event: Event) -> None:
        row = event.row
        token = self.tokens(int(row["bot_id"]))
        if token is None:
            raise RetryLater(f"bot {row['bot_id']} is not loaded in this worker")
        try:
            await self.api.call(
                token,
                "refundStarPayment",
                {
                    "user_id": int(row["telegram_user_id"]),
                    "telegram_payment_charge_id": str(row["telegram_payment_charge_id"]),
                },
            )
        except BadRequest as error:
            if "charge_already_refunded" not in error.description.lower():
                raise
            log.info("star refund %d: the charge was refunded already", event.id)
        async with connection(self.pool) as conn, conn.transaction():
            await self.queue.finish(conn, event)


class _SubscriptionChanged:
    """Telegram's `subscription` update: renewal cancelled, failed, or back on."""

    reads_telegram = False

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> None:
        return None

    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        body = visit.update.body
        state = {"canceled": "canceled", "active": "active", "failed": "failed"}.get(
            str(body.get("state"))
        )
        user = (body.get("user") or {}).get("id")
        if state is None or not isinstance(user, int):
            return []
        await conn.execute(
            Q["set_star_subscription_state"],
            {
                "bot_id": visit.update.bot_id,
                "telegram_user_id": user,
                "payload": str(body.get("invoice_payload") or ""),
                "state": state,
                "now": visit.now,
            },
        )
        return []


@dataclass(frozen=True)
class Cancelled:
    # None: not the person's active subscription, or Telegram refused; else the renewal date.
    subscription_id: int | None
    title: str
    renews_at: dt.datetime | None
    refused: str | None = None


class _CancelPress:
    """`stars:cancel:<subscription>`: Telegram told to stop renewing, then recorded."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> Cancelled:
        number = arg.removeprefix("cancel:")
        if not (number.isascii() and number.isdigit() and len(number) < 10):
            return Cancelled(None, "", None)
        async with connection(self.pool) as conn:
            cur = await conn.execute(
                Q["star_subscription_of"],
                {"id": int(number), "bot_id": update.bot_id, "telegram_user_id": update.sender_id},
            )
            row = await cur.fetchone()
        if row is None:
            return Cancelled(None, "", None)
        title = str(row["title"] or "")
        if row["state"] == "canceled":
            return Cancelled(int(row["id"]), title, row["renews_at"])
        try:
            await ctx.api.call(
                ctx.token,
                "editUserStarSubscription",
                {
                    "user_id": update.sender_id,
                    "telegram_payment_charge_id": str(row["first_charge_id"]),
                    "is_canceled": True,
                },
            )
        except (ServerError, TooManyRequests) as error:
            raise RetryLater(
                f"editUserStarSubscription: {error}", error.retry_after or 0.0
            ) from None
        except TelegramError as error:
            return Cancelled(None, title, None, error.description)
        return Cancelled(int(row["id"]), title, row["renews_at"])

    async def apply(self, conn: Connection, visit: Visit, cancelled: Cancelled) -> list[Reply]:
        update, say = visit.update, visit.say
        answer = callback_answer(update)
        if cancelled.subscription_id is None:
            why = say(TELEGRAM_REFUSED if cancelled.refused else NO_SUCH)
            return [answer, html_message(update.chat_key, say(NOT_CHANGED, why=why))]
        await conn.execute(
            Q["cancel_star_subscription"], {"id": cancelled.subscription_id, "now": visit.now}
        )
        title = isolate(escape_html(cancelled.title)) if cancelled.title else say(THE_CHANNEL)
        if cancelled.renews_at is None:
            text = say(RENEWAL_CANCELLED_OPEN, title=title)
        else:
            text = say(RENEWAL_CANCELLED, title=title, until=say.date(cancelled.renews_at))
        return [answer, html_message(update.chat_key, text)]
