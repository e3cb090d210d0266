"""Telegram Stars in the simulator: invoices a bot sends or links to, the pre-checkout a payment
waits on (Telegram's 10 seconds), the `successful_payment` that follows, 30-day subscriptions
renewed on request, and the bot's Star transactions.

The Bot API side: `sendInvoice`, `createInvoiceLink`, `answerPreCheckoutQuery`,
`editUserStarSubscription`, `getStarTransactions`, `refundStarPayment` (with its
`refunded_payment` message). The control side: `POST /_sim/pay` (a person
pays an invoice sent to them, by its payload, or through a link), `POST /_sim/renew` (Telegram
charges a subscription again), `GET /_sim/stars` (answers, transactions, subscriptions)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from simulators.fields import fields
from simulators.telegram.botapi import Method
from simulators.telegram.control import control_target
from simulators.telegram.state import ApiError, Bot, World

Params = dict[str, Any]

# Telegram's deadline for the answer to a pre-checkout query.
ANSWER_SECONDS = 10.0
SUBSCRIPTION_PERIOD = 2592000
SUBSCRIPTION_CAP = 10_000
TOO_OLD = "Bad Request: query is too old and response timeout expired or query ID is invalid"


@dataclass(frozen=True)
class StarInvoice:
    bot_id: int
    title: str
    description: str
    payload: str
    currency: str
    amount: int
    subscription_period: int | None = None


@dataclass
class Query:
    user_id: int
    invoice: StarInvoice
    sent: float
    answered: asyncio.Future[tuple[bool, str | None]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


@dataclass
class Subscription:
    bot_id: int
    user_id: int
    invoice: StarInvoice
    first_charge_id: str
    expires: int
    canceled: bool = False


@dataclass
class Charge:
    bot_id: int
    user_id: int
    invoice: StarInvoice
    refunded: bool = False


class Desk:
    """What the simulator knows of Stars; one per world."""

    def __init__(self) -> None:
        # Invoice links by their slug (`https://t.me/$<slug>`).
        self.links: dict[str, StarInvoice] = {}
        # Invoices sent to a person, by (chat, message id).
        self.sent: dict[tuple[int, int], StarInvoice] = {}
        self.queries: dict[str, Query] = {}
        # Every answerPreCheckoutQuery, in order: id, ok, error_message, seconds after the query.
        self.answers: list[dict[str, Any]] = []
        # Per bot, in order, as getStarTransactions lists them.
        self.transactions: dict[int, list[dict[str, Any]]] = {}
        self.subscriptions: dict[str, Subscription] = {}
        # Every charge by its id: whose, for what, and whether it was refunded.
        self.charges: dict[str, Charge] = {}


def desk(world: World) -> Desk:
    if world.stars is None:
        world.stars = Desk()
    found: Desk = world.stars
    return found


def _invoice(bot: Bot, params: Params, *, link: bool) -> StarInvoice:
    title, description = str(params.get("title") or ""), str(params.get("description") or "")
    payload = params.get("payload")
    currency = str(params.get("currency") or "")
    if not 1 <= len(title) <= 32:
        raise ApiError(400, "Bad Request: TITLE_INVALID")
    if not 1 <= len(description) <= 255:
        raise ApiError(400, "Bad Request: DESCRIPTION_INVALID")
    if not isinstance(payload, str) or not 1 <= len(payload.encode()) <= 128:
        raise ApiError(400, "Bad Request: INVOICE_PAYLOAD_INVALID")
    if currency != "XTR":
        raise ApiError(400, "Bad Request: CURRENCY_INVALID")
    if params.get("provider_token") not in (None, ""):
        raise ApiError(400, "Bad Request: PAYMENT_PROVIDER_INVALID")
    prices = params.get("prices")
    if (
        not isinstance(prices, list)
        or len(prices) != 1
        or not isinstance(prices[0], dict)
        or not isinstance(prices[0].get("amount"), int)
        or prices[0]["amount"] <= 0
    ):
        raise ApiError(400, "Bad Request: CURRENCY_TOTAL_AMOUNT_INVALID")
    amount = int(prices[0]["amount"])
    period = params.get("subscription_period")
    if period is not None:
        if not link:
            raise ApiError(400, "Bad Request: SUBSCRIPTION_PERIOD_INVALID")
        if period != SUBSCRIPTION_PERIOD or amount > SUBSCRIPTION_CAP:
            raise ApiError(400, "Bad Request: SUBSCRIPTION_PERIOD_INVALID")
    return StarInvoice(bot.id, title, description, payload, currency, amount, period)


def send_invoice(world: World, bot: Bot, params: Params) -> Any:
    invoice = _invoice(bot, params, link=False)
    chat_id = int(params.get("chat_id") or 0)
    chat = world.chat(chat_id)
    world.rate_limit(bot, chat_id)
    message_id = chat.next_message_id
    chat.next_message_id += 1
    markup = params.get("reply_markup") or {
        "inline_keyboard": [[{"text": f"Pay ⭐️{invoice.amount}", "pay": True}]]
    }
    message = {
        "message_id": message_id,
        "from": bot.user(),
        "chat": chat.as_json(),
        "date": int(time.time()),
        "invoice": {
            "title": invoice.title,
            "description": invoice.description,
            "start_parameter": "",
            "currency": invoice.currency,
            "total_amount": invoice.amount,
        },
        "reply_markup": markup,
    }
    chat.messages[message_id] = message
    chat.bot_of[message_id] = bot.id
    desk(world).sent[(chat_id, message_id)] = invoice
    world.touch()
    world.sent.append(
        {
            "bot_id": bot.id,
            "chat_id": chat_id,
            "message_id": message_id,
            "kind": "invoice",
            "text": f"{invoice.title}: {invoice.amount} XTR",
            "file_id": None,
            "at": time.time(),
        }
    )
    return message


def create_invoice_link(world: World, bot: Bot, params: Params) -> Any:
    invoice = _invoice(bot, params, link=True)
    slug = secrets.token_urlsafe(12)
    desk(world).links[slug] = invoice
    return f"https://t.me/${slug}"


def answer_pre_checkout_query(world: World, bot: Bot, params: Params) -> Any:
    query_id = str(params.get("pre_checkout_query_id") or "")
    ok = params.get("ok")
    if not isinstance(ok, bool):
        raise ApiError(400, 'Bad Request: parameter "ok" is required')
    error_message = params.get("error_message")
    if not ok and not (isinstance(error_message, str) and error_message.strip()):
        raise ApiError(400, "Bad Request: ERROR_MESSAGE_EMPTY")
    found = desk(world).queries.get(query_id)
    if found is None:
        raise ApiError(400, TOO_OLD)
    seconds = time.monotonic() - found.sent
    desk(world).answers.append(
        {
            "pre_checkout_query_id": query_id,
            "user_id": found.user_id,
            "ok": ok,
            "error_message": None if ok else error_message,
            "seconds": round(seconds, 4),
        }
    )
    if seconds > ANSWER_SECONDS or found.answered.done():
        raise ApiError(400, TOO_OLD)
    found.answered.set_result((ok, None if ok else str(error_message)))
    return True


def edit_user_star_subscription(world: World, bot: Bot, params: Params) -> Any:
    charge = str(params.get("telegram_payment_charge_id") or "")
    user_id = int(params.get("user_id") or 0)
    canceled = params.get("is_canceled")
    if not isinstance(canceled, bool):
        raise ApiError(400, 'Bad Request: parameter "is_canceled" is required')
    found = desk(world).subscriptions.get(charge)
    if found is None or found.bot_id != bot.id or found.user_id != user_id:
        raise ApiError(400, "Bad Request: CHARGE_ID_INVALID")
    found.canceled = canceled
    world.touch()
    return True


def refund_star_payment(world: World, bot: Bot, params: Params) -> Any:
    """The Stars go back to the person, who (as the bot) is told with `refunded_payment`; the
    refund is a transaction under the charge's own id."""
    stars = desk(world)
    charge_id = str(params.get("telegram_payment_charge_id") or "")
    found = stars.charges.get(charge_id)
    if found is None or found.bot_id != bot.id or found.user_id != int(params.get("user_id") or 0):
        raise ApiError(400, "Bad Request: CHARGE_NOT_FOUND")
    if found.refunded:
        raise ApiError(400, "Bad Request: CHARGE_ALREADY_REFUNDED")
    found.refunded = True
    now = int(time.time())
    stars.transactions.setdefault(bot.id, []).append(
        {
            "id": charge_id,
            "amount": found.invoice.amount,
            "date": now,
            "receiver": {"type": "user", "user": _user(world, found.user_id)},
        }
    )
    chat = world.chat(found.user_id)
    message_id = chat.next_message_id
    chat.next_message_id += 1
    message = {
        "message_id": message_id,
        "from": _user(world, found.user_id),
        "chat": chat.as_json(),
        "date": now,
        "refunded_payment": {
            "currency": found.invoice.currency,
            "total_amount": found.invoice.amount,
            "invoice_payload": found.invoice.payload,
            "telegram_payment_charge_id": charge_id,
        },
    }
    chat.messages[message_id] = message
    chat.bot_of[message_id] = bot.id
    world.add_update(bot, {"message": message})
    return True


def get_star_transactions(world: World, bot: Bot, params: Params) -> Any:
    offset = int(params.get("offset") or 0)
    limit = int(params.get("limit") or 100)
    if not 1 <= limit <= 100 or offset < 0:
        raise ApiError(400, "Bad Request: LIMIT_INVALID")
    listed = desk(world).transactions.get(bot.id, [])
    return {"transactions": listed[offset : offset + limit]}


METHODS: dict[str, Method] = {
    "sendinvoice": send_invoice,
    "createinvoicelink": create_invoice_link,
    "answerprecheckoutquery": answer_pre_checkout_query,
    "edituserstarsubscription": edit_user_star_subscription,
    "getstartransactions": get_star_transactions,
    "refundstarpayment": refund_star_payment,
}


def _user(world: World, user_id: int) -> dict[str, Any]:
    return {"id": user_id, "is_bot": False, "first_name": world.name_of(user_id) or "Person"}


def _find(world: World, bot: Bot, body: dict[str, Any]) -> StarInvoice | None:
    """The invoice a person pays: through a link, or one the bot sent (to them, or to someone
    who forwarded it). With `total_amount`, a client claiming that amount for it, or for an
    invoice the simulator never saw (one sent before a reset); with `currency`, that currency."""
    stars = desk(world)
    found: StarInvoice | None = None
    if body.get("link"):
        found = stars.links.get(str(body["link"]).rsplit("$", 1)[-1])
        found = found if found is not None and found.bot_id == bot.id else None
    elif body.get("message_id") and body.get("user_id"):
        # Telegram's Pay button under an invoice in the person's chat.
        found = stars.sent.get((int(body["user_id"]), int(body["message_id"])))
        found = found if found is not None and found.bot_id == bot.id else None
    else:
        payload = str(body.get("payload") or "")
        sent = [i for i in stars.sent.values() if i.bot_id == bot.id and i.payload == payload]
        found = sent[-1] if sent else None
        if found is None and "total_amount" in body:
            found = StarInvoice(bot.id, "Invoice", "Invoice", payload, "XTR", 1)
    if found is not None and "total_amount" in body:
        found = replace(found, amount=int(body["total_amount"]))
    if found is not None and "currency" in body:
        found = replace(found, currency=str(body["currency"]))
    return found


def _charge(
    world: World,
    bot: Bot,
    user_id: int,
    invoice: StarInvoice,
    *,
    first: Subscription | None = None,
) -> dict[str, Any]:
    """Stars taken: the bot's transaction, and the `successful_payment` message it is told
    of. `first`: a subscription charged again."""
    stars = desk(world)
    charge = f"stxsim{secrets.token_hex(12)}"
    now = int(time.time())
    paid: dict[str, Any] = {
        "currency": invoice.currency,
        "total_amount": invoice.amount,
        "invoice_payload": invoice.payload,
        "telegram_payment_charge_id": charge,
        "provider_payment_charge_id": "",
    }
    if invoice.subscription_period is not None:
        start = now if first is None else max(now, first.expires)
        expires = start + invoice.subscription_period
        paid |= {
            "is_recurring": True,
            "is_first_recurring": first is None,
            "subscription_expiration_date": expires,
        }
        if first is None:
            subscription = Subscription(bot.id, user_id, invoice, charge, expires)
            stars.subscriptions[charge] = subscription
        else:
            first.expires = expires
    chat = world.chat(user_id)
    message_id = chat.next_message_id
    chat.next_message_id += 1
    message = {
        "message_id": message_id,
        "from": _user(world, user_id),
        "chat": chat.as_json(),
        "date": now,
        "successful_payment": paid,
    }
    chat.messages[message_id] = message
    chat.bot_of[message_id] = bot.id
    source: dict[str, Any] = {
        "type": "user",
        "transaction_type": "invoice_payment",
        "user": _user(world, user_id),
        "invoice_payload": invoice.payload,
    }
    if invoice.subscription_period is not None:
        source["subscription_period"] = invoice.subscription_period
    stars.transactions.setdefault(bot.id, []).append(
        {"id": charge, "amount": invoice.amount, "date": now, "source": source}
    )
    stars.charges[charge] = Charge(bot.id, user_id, invoice)
    update = world.add_update(bot, {"message": message})
    return {"charge_id": charge, "update_id": update["update_id"], "successful_payment": paid}


async def control_pay(request: Request) -> Response:
    """`{bot_id | bot_username | token, user_id, payload | link | message_id, total_amount?,
    currency?}`:
    the person pays (see `_find`). The bot is
    sent a `pre_checkout_query`; an `ok: true` within 10 s takes the Stars and sends the
    `successful_payment`; a refusal or no answer fails the payment, as in Telegram."""
    world: World = request.app.state.world
    body = await fields(request)
    bot = control_target(world, body)
    user_id = int(body["user_id"])
    invoice = _find(world, bot, body)
    if invoice is None:
        return JSONResponse({"error": "no such invoice for that person from that bot"}, 404)
    stars = desk(world)
    query_id = str(world.random.getrandbits(63))
    query = Query(user_id, invoice, time.monotonic())
    stars.queries[query_id] = query
    world.add_update(
        bot,
        {
            "pre_checkout_query": {
                "id": query_id,
                "from": _user(world, user_id),
                "currency": invoice.currency,
                "total_amount": invoice.amount,
                "invoice_payload": invoice.payload,
            }
        },
    )
    try:
        ok, error_message = await asyncio.wait_for(asyncio.shield(query.answered), ANSWER_SECONDS)
    except TimeoutError:
        return JSONResponse({"ok": False, "error": "no answer within 10 s", "seconds": None})
    finally:
        stars.queries.pop(query_id, None)
    seconds = round(time.monotonic() - query.sent, 4)
    if not ok:
        # Telegram shows the bot's error message to the person.
        world.touch()
        world.notices.setdefault(user_id, deque(maxlen=20)).append(
            (world.revision, str(error_message))
        )
        return JSONResponse({"ok": False, "error_message": error_message, "seconds": seconds})
    return JSONResponse({"ok": True, "seconds": seconds, **_charge(world, bot, user_id, invoice)})


async def control_renew(request: Request) -> Response:
    """`{charge_id}`: Telegram charges the subscription that payment began once more, unless
    it was cancelled."""
    world: World = request.app.state.world
    body = await fields(request)
    found = desk(world).subscriptions.get(str(body.get("charge_id") or ""))
    if found is None:
        return JSONResponse({"error": "no subscription began with that charge"}, 404)
    if found.canceled:
        return JSONResponse({"error": "the subscription was cancelled"}, 409)
    bot = world.bots[found.bot_id]
    return JSONResponse(
        {"ok": True, **_charge(world, bot, found.user_id, found.invoice, first=found)}
    )


async def control_stars(request: Request) -> Response:
    world: World = request.app.state.world
    stars = desk(world)
    return JSONResponse(
        {
            "answers": stars.answers,
            "transactions": stars.transactions,
            "subscriptions": [
                {
                    "first_charge_id": s.first_charge_id,
                    "bot_id": s.bot_id,
                    "user_id": s.user_id,
                    "payload": s.invoice.payload,
                    "expires": s.expires,
                    "canceled": s.canceled,
                }
                for s in stars.subscriptions.values()
            ],
        }
    )


ROUTES = [
    Route("/_sim/pay", control_pay, methods=["POST"]),
    Route("/_sim/renew", control_renew, methods=["POST"]),
    Route("/_sim/stars", control_stars, methods=["GET"]),
]
