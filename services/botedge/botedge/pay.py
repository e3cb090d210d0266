"""Paying for a channel from the bot.

`t.me/<bot>?start=pay_<channel id>` shows the channel's plans on sale (`GET /internal/gateways`):
one plan is shown with a button per gateway it is sold through; several are a button each,
and a press shows that plan's gateways (with a way back to all of them). A gateway's press asks
billing for an invoice at that plan (`POST /internal/invoices`) and edits the message to a
button with its `pay_url`. Both calls are made in `prepare`, before
the update's transaction; billing unreachable retries the update (parked while billing's
breaker is open), and the person is told once that we are on it (`WAITING`), the outcome then
coming as a new message. The invoice is asked for under the update's key (`asked_by`), so
however often a press is retried it makes one invoice. Access itself comes from billing once
the gateway's callback is in (`access.py`).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from dataclasses import dataclass
from typing import Any

from botedge.billing_client import (
    CODE_REFUSED,
    DAYS,
    STARS,
    STARS_SUBSCRIPTION_PERIOD,
    BillingClient,
    CodeRefusal,
    CouponRefused,
    Invoice,
    Offer,
    PlanOffer,
    asked_by,
)
from botedge.ids import ChatId
from botedge.outbox_store import Reply
from botedge.routing import (
    THE_CHANNEL,
    Context,
    Routes,
    Visit,
    callback_answer,
    end_step,
    html_message,
    set_step,
)
from botedge.telegram import ServerError, TelegramError, TooManyRequests, retry_later
from botedge.text import escape_html, money
from botedge.updates import InboxRow
from botedge.words import Speech, User, Words, isolate, msg, number, user
from shared.db import Connection

log = logging.getLogger("botedge.pay")

NOT_PAID = msg("pay.not_paid", "This link does not lead to a paid channel (any more).")
NO_GATEWAYS = msg(
    "pay.closed", "Payments are not open here right now. Please try again later.", form="html"
)
GATEWAY_OFF = msg("pay.gateway_off", "That way to pay is not available any more.")
PLAN_OFF = msg("pay.plan_off", "That plan is not on sale any more.")
ASK_COUPON = msg("coupon.ask", "Send your coupon code as a message.", form="html")
NOT_A_CODE = msg(
    "coupon.not_a_code",
    "That does not look like a coupon code: letters, digits, - and _, 3 to 32 of them.",
)
COUPON_EXPIRED = msg(
    "coupon.expired", "That was a while ago: press “{button}” under the pay link again."
)
HAVE_COUPON = msg("coupon.button", "I have a coupon", form="button")
NO_COUPON = msg("coupon.cancelled", "No coupon, then: the pay link above still works.")
COUPON_REFUSED = msg(
    "coupon.refused", "That coupon cannot be used: {why}. Send another code, or Cancel."
)
CANCEL = msg("cancel", "Cancel")
CHOOSE_PLAN = msg("pay.choose_plan", "Choose a plan:", form="html")
CHOOSE_GATEWAY = msg("pay.choose_gateway", "Choose how to pay:", form="html")
ALL_PLANS = msg("pay.all_plans", "« All plans")
START_TRIAL = msg("trial.start", "Start the free trial")
PAY_WITH = msg("pay.with", "Pay with {gateway}")
STARS_ONCE = msg("stars.once", "Pay {amount} ⭐ once")
STARS_MONTHLY = msg("stars.monthly", "Subscribe: {amount} ⭐ every 30 days")
BUNDLE = msg(
    "pay.bundle",
    "One payment opens {count} channel: {titles}.",
    "One payment opens {count} channels: {titles}.",
)
STARS_TITLE = msg("stars.title", "Channel access")
STARS_LABEL = msg("stars.label", "Access")
STARS_DESCRIBED = msg("stars.described", "{days} of access to {title}")
STARS_RENEWED = msg("stars.renewed", "Access to {title}, renewed every 30 days")
# Counted by the channels the invite links are for: one, or a bundle's.
INVOICE = msg(
    "pay.invoice",
    "Pay <b>{price}</b> for <b>{title}</b>{plan} with {gateway}. The link is valid for 24 hours; "
    "once the payment arrives, your invite link comes here.",
    "Pay <b>{price}</b> for <b>{title}</b>{plan} with {gateway}. The link is valid for 24 hours; "
    "once the payment arrives, your invite links come here.",
)
INVOICE_COUPON = msg(
    "pay.invoice_coupon",
    "Pay <b>{price}</b> instead of {list_price}, with coupon <code>{coupon}</code>, for "
    "<b>{title}</b>{plan} with {gateway}. The link is valid for 24 hours; once the payment "
    "arrives, your invite link comes here.",
    "Pay <b>{price}</b> instead of {list_price}, with coupon <code>{coupon}</code>, for "
    "<b>{title}</b>{plan} with {gateway}. The link is valid for 24 hours; once the payment "
    "arrives, your invite links come here.",
)
PAY_BUTTON = msg("pay.button", "Pay {price}", form="button")
STARS_INVOICE = msg(
    "stars.invoice",
    "Pay <b>{amount} ⭐</b> for <b>{title}</b> with the invoice below. It is valid for 24 hours; "
    "once paid, your invite link comes here.",
    "Pay <b>{amount} ⭐</b> for <b>{title}</b> with the invoice below. It is valid for 24 hours; "
    "once paid, your invite links come here.",
)
STARS_SUBSCRIBE = msg(
    "stars.subscribe",
    "Subscribe to <b>{title}</b> for <b>{amount} ⭐</b> every 30 days: Telegram renews it until "
    "you cancel, here or in Telegram's settings. Once paid, your invite link comes here.",
    "Subscribe to <b>{title}</b> for <b>{amount} ⭐</b> every 30 days: Telegram renews it until "
    "you cancel, here or in Telegram's settings. Once paid, your invite links come here.",
)
STARS_SUBSCRIBE_BUTTON = msg("stars.subscribe_button", "Subscribe for {amount} ⭐")
TRIAL_STARTED = msg(
    "trial.started",
    "Your free trial of <b>{title}</b> has started: {days}. Your invite link comes here in a "
    "moment.",
    form="html",
)
SEE_PLANS = msg("trial.see_plans", "See the plans")
NO_TRIAL = msg("trial.refused", "No free trial: {why}.")
CODE_REDEEMED = msg(
    "code.redeemed",
    "Your code gives you {days} of <b>{title}</b>: access until {until}. Your invite link "
    "comes here in a moment.",
)

# An access code as sent: 10 to 32 symbols of base32 (A-Z, 2-7), letters and digits both, so
# that a long word is not taken for one.
ACCESS_CODE = re.compile(r"(?=.*[2-7])(?=.*[A-Za-z])[A-Za-z2-7]{10,32}", re.ASCII)

COUPON_STEP = "coupon"
# How long the bot waits for the code after "I have a coupon".
COUPON_TTL = dt.timedelta(hours=1)
_CODE = re.compile(r"[A-Za-z0-9_-]{3,32}", re.ASCII)


def cancel_coupon(say: Speech) -> dict[str, Any]:
    return {"inline_keyboard": [[{"text": say(CANCEL), "callback_data": "coupon:cancel"}]]}


def _title(offer: Offer) -> str:
    """The channel's title in a message in HTML: the owner's words, escaped and isolated."""
    return isolate(escape_html(offer.title))


def offer_message(offer: Offer | None, say: Speech) -> tuple[str, dict[str, Any] | None]:
    """The offer's text and its buttons (none when there is nothing to press): a single plan's
    gateways, or a button per plan."""
    if offer is None:
        return say(NOT_PAID), None
    if not offer.plans:
        return say(NO_GATEWAYS), None
    if len(offer.plans) == 1:
        return plan_message(offer, offer.plans[0], say)
    text = f"<b>{_title(offer)}</b>\n{say(CHOOSE_PLAN)}"
    rows = [
        [
            {
                "text": f"{isolate(plan.name)}: {plan.price(say)}",
                "callback_data": f"plan:{offer.channel_id}:{plan.id}",
            }
        ]
        for plan in offer.plans
    ]
    return text, {"inline_keyboard": rows}


def _named(offer: Offer, plan: PlanOffer) -> str:
    """The plan's name after the channel's, when there is more than one plan."""
    return f" ({isolate(escape_html(plan.name))})" if len(offer.plans) > 1 else ""


def plan_message(offer: Offer, plan: PlanOffer, say: Speech) -> tuple[str, dict[str, Any]]:
    """One plan's price and a button per gateway it is sold through; with other plans on sale,
    a button back to them."""
    named = _named(offer, plan)
    back = [{"text": say(ALL_PLANS), "callback_data": f"plan:{offer.channel_id}"}]
    if plan.trial:
        text = f"<b>{_title(offer)}</b>{named}: {escape_html(plan.price(say))}."
        start = {
            "text": say(START_TRIAL),
            "callback_data": f"trial:{offer.channel_id}:{plan.id}",
        }
        return text, {"inline_keyboard": [[start], *([back] if len(offer.plans) > 1 else [])]}
    text = (
        f"<b>{_title(offer)}</b>{named}: {escape_html(plan.price(say))}.\n"
        f"{_bundle_line(plan, say)}{say(CHOOSE_GATEWAY)}"
    )
    rows = [
        [
            {
                "text": say(PAY_WITH, gateway=offer.gateway_title(g)),
                "callback_data": f"pay:{offer.channel_id}:{g}:{plan.id}",
            }
        ]
        for g in plan.gateways
        if g != STARS
    ]
    if STARS in plan.gateways:
        rows.extend(_stars_buttons(offer, plan, say))
    if len(offer.plans) > 1:
        rows.append(back)
    return text, {"inline_keyboard": rows}


def _stars_buttons(offer: Offer, plan: PlanOffer, say: Speech) -> list[list[dict[str, str]]]:
    """Stars once; and, for a 30-day plan within Telegram's price cap, as a subscription that
    Telegram renews every 30 days."""
    rows = [
        [
            {
                "text": say(STARS_ONCE, amount=number(plan.amount)),
                "callback_data": f"pay:{offer.channel_id}:{STARS}:{plan.id}",
            }
        ]
    ]
    if plan.subscribable:
        rows.append(
            [
                {
                    "text": say(STARS_MONTHLY, amount=number(plan.amount)),
                    "callback_data": f"sub:{offer.channel_id}:{plan.id}",
                }
            ]
        )
    return rows


def _bundle_line(plan: PlanOffer, say: Speech) -> str:
    """For a bundle, the channels one payment opens, on a line of its own."""
    if not plan.channels:
        return ""
    titles = say.join([f"<b>{isolate(escape_html(title))}</b>" for title in plan.channels])
    return say(BUNDLE, len(plan.channels), titles=titles) + "\n"


def _stars_fields(
    offer: Offer, plan: PlanOffer, invoice: Invoice, description: str, say: Speech
) -> dict[str, Any]:
    """What Telegram's invoice in Stars carries, its payload our order reference."""
    return {
        "title": offer.title.strip()[:32] or say(STARS_TITLE),
        "description": description[:255],
        "payload": invoice.order_reference,
        "provider_token": "",
        "currency": invoice.currency,
        "prices": [{"label": plan.name[:32] or say(STARS_LABEL), "amount": int(invoice.amount)}],
    }


def _plain_title(offer: Offer, say: Speech) -> str | User:
    """The channel's title in plain text (an invoice's description), or "the channel"."""
    return user(offer.title.strip()) if offer.title.strip() else say(THE_CHANNEL)


def stars_invoice(
    chat_id: int, offer: Offer, plan: PlanOffer, invoice: Invoice, say: Speech
) -> Reply:
    """Telegram's own invoice for Stars, sent to the person."""
    title = _plain_title(offer, say)
    described = say(STARS_DESCRIBED, days=say(DAYS, plan.period_days), title=title)
    fields = _stars_fields(offer, plan, invoice, described, say)
    return Reply(ChatId(chat_id), "sendInvoice", {"chat_id": chat_id, **fields})


def stars_link_params(
    offer: Offer, plan: PlanOffer, invoice: Invoice, say: Speech
) -> dict[str, Any]:
    """`createInvoiceLink` for a subscription Telegram renews every 30 days."""
    title = _plain_title(offer, say)
    described = say(STARS_RENEWED, title=title)
    fields = _stars_fields(offer, plan, invoice, described, say)
    return {**fields, "subscription_period": STARS_SUBSCRIPTION_PERIOD}


def invoice_message(
    offer: Offer, plan: PlanOffer, invoice: Invoice, say: Speech
) -> tuple[str, dict[str, Any]]:
    """The pay link; without a coupon on it, a button to enter one."""
    price = escape_html(money(say, invoice.amount, invoice.currency))
    title, named = _title(offer), _named(offer, plan)
    gateway = offer.gateway_title(invoice.gateway)
    if invoice.coupon is not None and invoice.list_price is not None:
        list_price = escape_html(money(say, invoice.list_price, invoice.currency))
        coupon = escape_html(invoice.coupon)
        text = say(
            INVOICE_COUPON,
            _links(plan),
            price=price,
            list_price=list_price,
            coupon=coupon,
            title=title,
            plan=named,
            gateway=gateway,
        )
    else:
        text = say(INVOICE, _links(plan), price=price, title=title, plan=named, gateway=gateway)
    button = say(PAY_BUTTON, price=money(say, invoice.amount, invoice.currency))
    rows = [[{"text": button, "url": invoice.pay_url or ""}]]
    if invoice.coupon is None:
        data = f"coupon:{offer.channel_id}:{invoice.gateway}:{plan.id}"
        rows.append([{"text": say(HAVE_COUPON), "callback_data": data}])
    return text, {"inline_keyboard": rows}


def _links(plan: PlanOffer) -> int:
    """How many invite links a payment for the plan brings."""
    return max(1, len(plan.channels))


def _channel_id(text: str) -> int:
    return int(text) if text.isascii() and text.isdigit() and len(text) < 10 else 0


class Pay:
    def __init__(self, billing: BillingClient, words: Words) -> None:
        self.billing = billing
        self.words = words

    def register(self, routes: Routes) -> None:
        routes.start_prefixes["pay_"] = _Offer(self.billing)
        routes.callbacks["plan:"] = _PlanPress(self.billing)
        routes.callbacks["pay:"] = _Press(self.billing)
        routes.callbacks["sub:"] = _Subscribe(self.billing, self.words)
        routes.callbacks["coupon:"] = _CouponPress()
        routes.callbacks["trial:"] = _TrialPress(self.billing)
        code = _AccessCode(self.billing)
        routes.start_prefixes["code_"] = code
        routes.texts.append((ACCESS_CODE, code))
        routes.steps[COUPON_STEP] = _CouponCode(self.billing)


class _Offer:
    def __init__(self, billing: BillingClient) -> None:
        self.billing = billing

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> Offer | None:
        channel_id = _channel_id(arg)
        return await self.billing.offer(channel_id) if channel_id else None

    async def apply(self, conn: Connection, visit: Visit, offer: Offer | None) -> list[Reply]:
        chat_id = visit.update.chat_key
        text, markup = offer_message(offer, visit.say)
        payload: dict[str, Any] = {"chat_id": chat_id, "text": text, "parse_mode": "HTML"}
        if markup:
            payload["reply_markup"] = markup
        return [Reply(chat_id, "sendMessage", payload)]


def _edited(
    update: InboxRow, text: str, markup: dict[str, Any] | None, notice: str | None = None
) -> list[Reply]:
    """A press answered, and the message pressed edited to show `text`; sent anew when the
    message is not there to edit, or when the person was told to wait for it (`WAITING`): an
    edit of a message above would go unnoticed."""
    chat_id = update.chat_key
    payload: dict[str, Any] = {
        "chat_id": chat_id,
        "text": text,
        "parse_mode": "HTML",
        "reply_markup": markup or {"inline_keyboard": []},
    }
    replies = [callback_answer(update, notice)]
    message_id = (update.body.get("message") or {}).get("message_id")
    if isinstance(message_id, int) and not update.told_waiting:
        replies.append(Reply(chat_id, "editMessageText", {**payload, "message_id": message_id}))
    else:
        replies.append(Reply(chat_id, "sendMessage", payload))
    return replies


@dataclass(frozen=True)
class PlanPressed:
    offer: Offer | None
    # None: every plan.
    plan_id: int | None


class _PlanPress:
    """`plan:<channel>:<plan>` shows that plan's gateways; `plan:<channel>`, every plan."""

    def __init__(self, billing: BillingClient) -> None:
        self.billing = billing

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> PlanPressed:
        channel, _, plan = arg.partition(":")
        channel_id = _channel_id(channel)
        offer = await self.billing.offer(channel_id) if channel_id else None
        return PlanPressed(offer, _channel_id(plan) if plan else None)

    async def apply(self, conn: Connection, visit: Visit, pressed: PlanPressed) -> list[Reply]:
        offer = pressed.offer
        plan = None
        if offer is not None and pressed.plan_id is not None:
            plan = offer.plan(pressed.plan_id)
        if offer is not None and plan is not None:
            text, markup = plan_message(offer, plan, visit.say)
            return _edited(visit.update, text, markup)
        plan_off = offer is not None and pressed.plan_id is not None
        text, shown = offer_message(offer, visit.say)
        return _edited(visit.update, text, shown, visit.say(PLAN_OFF) if plan_off else None)


@dataclass(frozen=True)
class Pressed:
    offer: Offer | None
    plan: PlanOffer | None
    # A refusal only comes of a coupon, which a gateway's press does not carry.
    outcome: Invoice | CouponRefused | str


class _Press:
    """`pay:<channel>:<gateway>:<plan>` makes an invoice; without a plan (a button sent before
    plans were listed), at the channel's first plan."""

    def __init__(self, billing: BillingClient) -> None:
        self.billing = billing

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> Pressed:
        channel, _, rest = arg.partition(":")
        gateway, _, plan_text = rest.partition(":")
        channel_id = _channel_id(channel)
        offer = await self.billing.offer(channel_id) if channel_id else None
        if offer is None:
            return Pressed(None, None, "not_paid")
        plan = offer.plan(_channel_id(plan_text)) if plan_text else next(iter(offer.plans), None)
        if plan is None:
            return Pressed(offer, None, "plan_off")
        if gateway not in plan.gateways:
            return Pressed(offer, plan, "gateway_off")
        outcome = await self.billing.invoice(
            update.sender_id, channel_id, gateway, plan.id, request_key=asked_by(update)
        )
        return Pressed(offer, plan, outcome)

    async def apply(self, conn: Connection, visit: Visit, pressed: Pressed) -> list[Reply]:
        offer, plan, outcome = pressed.offer, pressed.plan, pressed.outcome
        if offer is not None and plan is not None and isinstance(outcome, Invoice):
            say = visit.say
            if outcome.gateway == STARS:
                amount = escape_html(say.digits(outcome.amount))
                text = say(STARS_INVOICE, _links(plan), amount=amount, title=_title(offer))
                replies = _edited(visit.update, text, None)
                chat_id = visit.update.chat_key
                return [*replies, stars_invoice(chat_id, offer, plan, outcome, say)]
            text, markup = invoice_message(offer, plan, outcome, say)
            return _edited(visit.update, text, markup)
        return _not_made(visit, offer, plan, str(outcome))


def _not_made(
    visit: Visit, offer: Offer | None, plan: PlanOffer | None, outcome: str
) -> list[Reply]:
    """No invoice: the plan's gateways again when the one pressed is off; the offer otherwise,
    noting a plan gone."""
    if outcome == "gateway_off" and offer is not None and plan is not None:
        text, markup = plan_message(offer, plan, visit.say)
        return _edited(visit.update, text, markup, visit.say(GATEWAY_OFF))
    notice = visit.say(PLAN_OFF) if outcome == "plan_off" else None
    text, shown = offer_message(None if outcome == "not_paid" else offer, visit.say)
    return _edited(visit.update, text, shown, notice)


@dataclass(frozen=True)
class Subscribing:
    offer: Offer | None
    plan: PlanOffer | None
    # Telegram's link to subscribe, or why there is none ("not_paid", "plan_off", ...).
    outcome: str
    invoice: Invoice | None = None


class _Subscribe:
    """`sub:<channel>:<plan>`: an invoice in Stars, and Telegram's link to subscribe to it
    (`createInvoiceLink` with a 30-day `subscription_period`); each renewal pays it again."""

    def __init__(self, billing: BillingClient, words: Words) -> None:
        self.billing = billing
        self.words = words

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> Subscribing:
        channel, _, plan_text = arg.partition(":")
        channel_id = _channel_id(channel)
        offer = await self.billing.offer(channel_id) if channel_id else None
        if offer is None:
            return Subscribing(None, None, "not_paid")
        plan = offer.plan(_channel_id(plan_text))
        if plan is None:
            return Subscribing(offer, None, "plan_off")
        if not plan.subscribable:
            return Subscribing(offer, plan, "gateway_off")
        invoice = await self.billing.invoice(
            update.sender_id, channel_id, STARS, plan.id, request_key=asked_by(update)
        )
        if not isinstance(invoice, Invoice):
            return Subscribing(offer, plan, invoice if isinstance(invoice, str) else "gateway_off")
        try:
            say = self.words.speech(update.language, update.bot_id)
            link = await ctx.api.call(
                ctx.token, "createInvoiceLink", stars_link_params(offer, plan, invoice, say)
            )
        except (ServerError, TooManyRequests) as error:
            raise retry_later("createInvoiceLink", error) from None
        except TelegramError as error:
            log.warning("createInvoiceLink refused: %s", error)
            return Subscribing(offer, plan, "gateway_off")
        return Subscribing(offer, plan, str(link), invoice)

    async def apply(self, conn: Connection, visit: Visit, made: Subscribing) -> list[Reply]:
        offer, plan, invoice = made.offer, made.plan, made.invoice
        say = visit.say
        if offer is not None and plan is not None and invoice is not None:
            amount = escape_html(say.digits(invoice.amount))
            text = say(STARS_SUBSCRIBE, _links(plan), title=_title(offer), amount=amount)
            label = say(STARS_SUBSCRIBE_BUTTON, amount=number(invoice.amount))
            button = {"text": label, "url": made.outcome}
            return _edited(visit.update, text, {"inline_keyboard": [[button]]})
        return _not_made(visit, offer, plan, made.outcome)


class _CouponPress:
    """`coupon:<channel>:<gateway>:<plan>` under a pay link: the person's next message is the
    code (`_CouponCode`). `coupon:cancel` drops the wait."""

    reads_telegram = False

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> None:
        return None

    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        update = visit.update
        answer = callback_answer(update)
        if visit.person_id is None:
            return [answer]
        if visit.arg == "cancel":
            await end_step(conn, visit)
            return [answer, html_message(update.chat_key, visit.say(NO_COUPON))]
        channel, gateway, plan = [*visit.arg.split(":"), "", ""][:3]
        if not (_channel_id(channel) and _channel_id(plan) and gateway):
            return [answer]
        data = {"channel_id": int(channel), "gateway": gateway, "plan_id": int(plan)}
        await set_step(conn, visit, COUPON_STEP, data, COUPON_TTL)
        return [
            answer,
            html_message(update.chat_key, visit.say(ASK_COUPON), cancel_coupon(visit.say)),
        ]


@dataclass(frozen=True)
class CouponTyped:
    offer: Offer | None
    plan: PlanOffer | None
    # The invoice made with it, billing's refusal, or what else came of it ("expired",
    # "not_a_code", "not_paid", "plan_off", "gateway_off").
    outcome: Invoice | CouponRefused | str


class _CouponCode:
    """The message after "I have a coupon": a new invoice for the same plan and gateway with
    the coupon on it, or billing's reason it does not apply (and another try)."""

    def __init__(self, billing: BillingClient) -> None:
        self.billing = billing

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> CouponTyped:
        step = ctx.step
        if step is None or step.expired:
            return CouponTyped(None, None, "expired")
        code = str(update.body.get("text") or "").strip()
        if not _CODE.fullmatch(code):
            return CouponTyped(None, None, "not_a_code")
        channel_id = int(step.data["channel_id"])
        offer = await self.billing.offer(channel_id)
        plan = None if offer is None else offer.plan(int(step.data["plan_id"]))
        if offer is None or plan is None:
            return CouponTyped(offer, None, "not_paid" if offer is None else "plan_off")
        gateway = str(step.data["gateway"])
        outcome = await self.billing.invoice(
            update.sender_id, channel_id, gateway, plan.id, code, asked_by(update)
        )
        return CouponTyped(offer, plan, outcome)

    async def apply(self, conn: Connection, visit: Visit, typed: CouponTyped) -> list[Reply]:
        update, outcome, say = visit.update, typed.outcome, visit.say
        cancel = cancel_coupon(say)
        if outcome == "not_a_code":
            return [html_message(update.chat_key, say(NOT_A_CODE), cancel)]
        if isinstance(outcome, CouponRefused):
            # billing's words for why, in English.
            text = say(COUPON_REFUSED, why=user(escape_html(outcome.detail)))
            return [html_message(update.chat_key, text, cancel)]
        await end_step(conn, visit)
        if isinstance(outcome, Invoice) and typed.offer is not None and typed.plan is not None:
            made = invoice_message(typed.offer, typed.plan, outcome, say)
            return [html_message(update.chat_key, *made)]
        if outcome == "expired":
            return [html_message(update.chat_key, say(COUPON_EXPIRED, button=say(HAVE_COUPON)))]
        said = {"plan_off": PLAN_OFF, "gateway_off": GATEWAY_OFF}.get(str(outcome), NOT_PAID)
        return [html_message(update.chat_key, say(said))]


@dataclass(frozen=True)
class TrialPressed:
    offer: Offer | None
    plan: PlanOffer | None
    # "started", "plan_off", "not_paid", or billing's words for why not.
    outcome: str


class _TrialPress:
    """`trial:<channel>:<plan>` takes the free trial; the invite link follows from billing's
    access event, as after a payment."""

    def __init__(self, billing: BillingClient) -> None:
        self.billing = billing

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> TrialPressed:
        channel, _, plan_text = arg.partition(":")
        channel_id = _channel_id(channel)
        offer = await self.billing.offer(channel_id) if channel_id else None
        plan = None if offer is None else offer.plan(_channel_id(plan_text))
        if offer is None or plan is None or not plan.trial:
            return TrialPressed(offer, None, "not_paid" if offer is None else "plan_off")
        outcome = await self.billing.trial(update.sender_id, channel_id, plan.id)
        return TrialPressed(offer, plan, outcome)

    async def apply(self, conn: Connection, visit: Visit, pressed: TrialPressed) -> list[Reply]:
        offer, plan, outcome, say = pressed.offer, pressed.plan, pressed.outcome, visit.say
        if outcome == "started" and offer is not None and plan is not None:
            days = say(DAYS, plan.period_days)
            return _edited(visit.update, say(TRIAL_STARTED, title=_title(offer), days=days), None)
        if outcome in ("plan_off", "not_paid"):
            text, shown = offer_message(None if outcome == "not_paid" else offer, say)
            notice = say(PLAN_OFF) if outcome == "plan_off" else None
            return _edited(visit.update, text, shown, notice)
        paid = [p for p in (offer.plans if offer else ()) if not p.trial]
        markup = None
        if offer is not None and paid:
            see = {"text": say(SEE_PLANS), "callback_data": f"plan:{offer.channel_id}"}
            markup = {"inline_keyboard": [[see]]}
        # billing's words for why, in English.
        return _edited(visit.update, say(NO_TRIAL, why=user(escape_html(outcome))), markup)


class _AccessCode:
    """`/start code_<code>`, or the code sent as a message: its free days through billing's
    grants path; the invite link follows from billing's access event."""

    def __init__(self, billing: BillingClient) -> None:
        self.billing = billing

    async def prepare(
        self, ctx: Context, update: InboxRow, arg: str
    ) -> dict[str, Any] | CodeRefusal:
        if not ACCESS_CODE.fullmatch(arg):
            return CodeRefusal(CODE_REFUSED)
        return await self.billing.redeem(update.sender_id, arg)

    async def apply(
        self, conn: Connection, visit: Visit, redeemed: dict[str, Any] | CodeRefusal
    ) -> list[Reply]:
        say = visit.say
        if isinstance(redeemed, CodeRefusal):
            return [html_message(visit.update.chat_key, redeemed.said(say))]
        until = say.digits(str(redeemed["membership"]["expires_at"])[:10])
        days = say(DAYS, int(redeemed["days"]))
        title = isolate(escape_html(str(redeemed["title"])))
        text = say(CODE_REDEEMED, days=days, title=title, until=until)
        return [html_message(visit.update.chat_key, text)]
