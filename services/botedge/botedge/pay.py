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
    STARS,
    STARS_SUBSCRIPTION_PERIOD,
    BillingClient,
    CouponRefused,
    Invoice,
    Offer,
    PlanOffer,
    asked_by,
)
from botedge.ids import ChatId
from botedge.outbox_store import Reply
from botedge.routing import (
    Context,
    Routes,
    Visit,
    callback_answer,
    end_step,
    html_message,
    set_step,
)
from botedge.telegram import ServerError, TelegramError, TooManyRequests, retry_later
from botedge.text import escape_html
from botedge.updates import InboxRow
from shared.db import Connection

log = logging.getLogger("botedge.pay")

NOT_PAID = "This link does not lead to a paid channel (any more)."
NO_GATEWAYS = "Payments are not open here right now. Please try again later."
GATEWAY_OFF = "That way to pay is not available any more."
PLAN_OFF = "That plan is not on sale any more."
ASK_COUPON = "Send your coupon code as a message."
NOT_A_CODE = "That does not look like a coupon code: letters, digits, - and _, 3 to 32 of them."
COUPON_EXPIRED = "That was a while ago: press “I have a coupon” under the pay link again."

# An access code as sent: 10 to 32 symbols of base32 (A-Z, 2-7), letters and digits both, so
# that a long word is not taken for one.
ACCESS_CODE = re.compile(r"(?=.*[2-7])(?=.*[A-Za-z])[A-Za-z2-7]{10,32}", re.ASCII)

COUPON_STEP = "coupon"
# How long the bot waits for the code after "I have a coupon".
COUPON_TTL = dt.timedelta(hours=1)
_CODE = re.compile(r"[A-Za-z0-9_-]{3,32}", re.ASCII)
CANCEL_COUPON = {"text": "Cancel", "callback_data": "coupon:cancel"}


def offer_message(offer: Offer | None) -> tuple[str, dict[str, Any] | None]:
    """The offer's text and its buttons (none when there is nothing to press): a single plan's
    gateways, or a button per plan."""
    if offer is None:
        return NOT_PAID, None
    if not offer.plans:
        return NO_GATEWAYS, None
    if len(offer.plans) == 1:
        return plan_message(offer, offer.plans[0])
    text = f"<b>{escape_html(offer.title)}</b>\nChoose a plan:"
    rows = [
        [
            {
                "text": f"{plan.name}: {plan.price()}",
                "callback_data": f"plan:{offer.channel_id}:{plan.id}",
            }
        ]
        for plan in offer.plans
    ]
    return text, {"inline_keyboard": rows}


def plan_message(offer: Offer, plan: PlanOffer) -> tuple[str, dict[str, Any]]:
    """One plan's price and a button per gateway it is sold through; with other plans on sale,
    a button back to them."""
    named = f" ({escape_html(plan.name)})" if len(offer.plans) > 1 else ""
    back = [{"text": "« All plans", "callback_data": f"plan:{offer.channel_id}"}]
    if plan.trial:
        text = f"<b>{escape_html(offer.title)}</b>{named}: {escape_html(plan.price())}."
        start = {
            "text": "Start the free trial",
            "callback_data": f"trial:{offer.channel_id}:{plan.id}",
        }
        return text, {"inline_keyboard": [[start], *([back] if len(offer.plans) > 1 else [])]}
    text = (
        f"<b>{escape_html(offer.title)}</b>{named}: {escape_html(plan.price())}.\n"
        f"{_bundle_line(plan)}Choose how to pay:"
    )
    rows = [
        [
            {
                "text": f"Pay with {offer.gateway_title(g)}",
                "callback_data": f"pay:{offer.channel_id}:{g}:{plan.id}",
            }
        ]
        for g in plan.gateways
        if g != STARS
    ]
    if STARS in plan.gateways:
        rows.extend(_stars_buttons(offer, plan))
    if len(offer.plans) > 1:
        rows.append(back)
    return text, {"inline_keyboard": rows}


def _stars_buttons(offer: Offer, plan: PlanOffer) -> list[list[dict[str, str]]]:
    """Stars once; and, for a 30-day plan within Telegram's price cap, as a subscription that
    Telegram renews every 30 days."""
    rows = [
        [
            {
                "text": f"Pay {plan.amount} ⭐ once",
                "callback_data": f"pay:{offer.channel_id}:{STARS}:{plan.id}",
            }
        ]
    ]
    if plan.subscribable:
        rows.append(
            [
                {
                    "text": f"Subscribe: {plan.amount} ⭐ every 30 days",
                    "callback_data": f"sub:{offer.channel_id}:{plan.id}",
                }
            ]
        )
    return rows


def _bundle_line(plan: PlanOffer) -> str:
    """For a bundle, the channels one payment opens, on a line of its own."""
    if not plan.channels:
        return ""
    titles = ", ".join(f"<b>{escape_html(title)}</b>" for title in plan.channels)
    return f"One payment opens {len(plan.channels)} channels: {titles}.\n"


def _stars_fields(
    offer: Offer, plan: PlanOffer, invoice: Invoice, description: str
) -> dict[str, Any]:
    """What Telegram's invoice in Stars carries, its payload our order reference."""
    return {
        "title": offer.title.strip()[:32] or "Channel access",
        "description": description[:255],
        "payload": invoice.order_reference,
        "provider_token": "",
        "currency": invoice.currency,
        "prices": [{"label": plan.name[:32] or "Access", "amount": int(invoice.amount)}],
    }


def stars_invoice(chat_id: int, offer: Offer, plan: PlanOffer, invoice: Invoice) -> Reply:
    """Telegram's own invoice for Stars, sent to the person."""
    days = "1 day" if plan.period_days == 1 else f"{plan.period_days} days"
    described = f"{days} of access to {offer.title.strip() or 'the channel'}"
    fields = _stars_fields(offer, plan, invoice, described)
    return Reply(ChatId(chat_id), "sendInvoice", {"chat_id": chat_id, **fields})


def stars_link_params(offer: Offer, plan: PlanOffer, invoice: Invoice) -> dict[str, Any]:
    """`createInvoiceLink` for a subscription Telegram renews every 30 days."""
    described = f"Access to {offer.title.strip() or 'the channel'}, renewed every 30 days"
    fields = _stars_fields(offer, plan, invoice, described)
    return {**fields, "subscription_period": STARS_SUBSCRIPTION_PERIOD}


def invoice_message(offer: Offer, plan: PlanOffer, invoice: Invoice) -> tuple[str, dict[str, Any]]:
    """The pay link; without a coupon on it, a button to enter one."""
    price = f"{escape_html(invoice.amount)} {escape_html(invoice.currency)}"
    named = f" ({escape_html(plan.name)})" if len(offer.plans) > 1 else ""
    off = ""
    if invoice.coupon is not None and invoice.list_price is not None:
        off = (
            f" instead of {escape_html(invoice.list_price)} {escape_html(invoice.currency)}, "
            f"with coupon <code>{escape_html(invoice.coupon)}</code>,"
        )
    text = (
        f"Pay <b>{price}</b>{off} for <b>{escape_html(offer.title)}</b>{named} with "
        f"{offer.gateway_title(invoice.gateway)}. The link is valid for 24 hours; once the payment "
        f"arrives, your invite {_links(plan)} here."
    )
    rows = [[{"text": f"Pay {invoice.amount} {invoice.currency}", "url": invoice.pay_url or ""}]]
    if invoice.coupon is None:
        data = f"coupon:{offer.channel_id}:{invoice.gateway}:{plan.id}"
        rows.append([{"text": "I have a coupon", "callback_data": data}])
    return text, {"inline_keyboard": rows}


def _links(plan: PlanOffer) -> str:
    return "links come" if plan.channels else "link comes"


def _channel_id(text: str) -> int:
    return int(text) if text.isascii() and text.isdigit() and len(text) < 10 else 0


class Pay:
    def __init__(self, billing: BillingClient) -> None:
        self.billing = billing

    def register(self, routes: Routes) -> None:
        routes.start_prefixes["pay_"] = _Offer(self.billing)
        routes.callbacks["plan:"] = _PlanPress(self.billing)
        routes.callbacks["pay:"] = _Press(self.billing)
        routes.callbacks["sub:"] = _Subscribe(self.billing)
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
        text, markup = offer_message(offer)
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
            text, markup = plan_message(offer, plan)
            return _edited(visit.update, text, markup)
        notice = PLAN_OFF if offer is not None and pressed.plan_id is not None else None
        text, shown = offer_message(offer)
        return _edited(visit.update, text, shown, notice)


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
            if outcome.gateway == STARS:
                text = (
                    f"Pay <b>{escape_html(outcome.amount)} ⭐</b> for "
                    f"<b>{escape_html(offer.title)}</b> with the invoice below. It is valid for 24 "
                    f"hours; once paid, your invite {_links(plan)} here."
                )
                replies = _edited(visit.update, text, None)
                return [*replies, stars_invoice(visit.update.chat_key, offer, plan, outcome)]
            text, markup = invoice_message(offer, plan, outcome)
            return _edited(visit.update, text, markup)
        if outcome == "gateway_off" and offer is not None and plan is not None:
            text, markup = plan_message(offer, plan)
            return _edited(visit.update, text, markup, GATEWAY_OFF)
        notice = PLAN_OFF if outcome == "plan_off" else None
        text, shown = offer_message(None if outcome == "not_paid" else offer)
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

    def __init__(self, billing: BillingClient) -> None:
        self.billing = billing

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
            link = await ctx.api.call(
                ctx.token, "createInvoiceLink", stars_link_params(offer, plan, invoice)
            )
        except (ServerError, TooManyRequests) as error:
            raise retry_later("createInvoiceLink", error) from None
        except TelegramError as error:
            log.warning("createInvoiceLink refused: %s", error)
            return Subscribing(offer, plan, "gateway_off")
        return Subscribing(offer, plan, str(link), invoice)

    async def apply(self, conn: Connection, visit: Visit, made: Subscribing) -> list[Reply]:
        offer, plan, invoice = made.offer, made.plan, made.invoice
        if offer is not None and plan is not None and invoice is not None:
            text = (
                f"Subscribe to <b>{escape_html(offer.title)}</b> for "
                f"<b>{escape_html(invoice.amount)} ⭐</b> every 30 days: Telegram renews it until "
                f"you cancel, here or in Telegram's settings. Once paid, your invite "
                f"{_links(plan)} here."
            )
            button = {"text": f"Subscribe for {invoice.amount} ⭐", "url": made.outcome}
            return _edited(visit.update, text, {"inline_keyboard": [[button]]})
        if made.outcome == "gateway_off" and offer is not None and plan is not None:
            text, markup = plan_message(offer, plan)
            return _edited(visit.update, text, markup, GATEWAY_OFF)
        notice = PLAN_OFF if made.outcome == "plan_off" else None
        text, shown = offer_message(None if made.outcome == "not_paid" else offer)
        return _edited(visit.update, text, shown, notice)


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
            return [
                answer,
                html_message(update.chat_key, "No coupon, then: the pay link above still works."),
            ]
        channel, gateway, plan = [*visit.arg.split(":"), "", ""][:3]
        if not (_channel_id(channel) and _channel_id(plan) and gateway):
            return [answer]
        data = {"channel_id": int(channel), "gateway": gateway, "plan_id": int(plan)}
        await set_step(conn, visit, COUPON_STEP, data, COUPON_TTL)
        return [
            answer,
            html_message(update.chat_key, ASK_COUPON, {"inline_keyboard": [[CANCEL_COUPON]]}),
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
        update, outcome = visit.update, typed.outcome
        cancel = {"inline_keyboard": [[CANCEL_COUPON]]}
        if outcome == "not_a_code":
            return [html_message(update.chat_key, NOT_A_CODE, cancel)]
        if isinstance(outcome, CouponRefused):
            why = escape_html(outcome.detail)
            text = f"That coupon cannot be used: {why}. Send another code, or Cancel."
            return [html_message(update.chat_key, text, cancel)]
        await end_step(conn, visit)
        if isinstance(outcome, Invoice) and typed.offer is not None and typed.plan is not None:
            return [
                html_message(update.chat_key, *invoice_message(typed.offer, typed.plan, outcome))
            ]
        said = {
            "expired": COUPON_EXPIRED,
            "plan_off": PLAN_OFF,
            "gateway_off": GATEWAY_OFF,
        }.get(str(outcome), NOT_PAID)
        return [html_message(update.chat_key, said)]


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
        offer, plan, outcome = pressed.offer, pressed.plan, pressed.outcome
        if outcome == "started" and offer is not None and plan is not None:
            days = "1 day" if plan.period_days == 1 else f"{plan.period_days} days"
            text = (
                f"Your free trial of <b>{escape_html(offer.title)}</b> has started: {days}. "
                "Your invite link comes here in a moment."
            )
            return _edited(visit.update, text, None)
        if outcome in ("plan_off", "not_paid"):
            text, shown = offer_message(None if outcome == "not_paid" else offer)
            return _edited(visit.update, text, shown, PLAN_OFF if outcome == "plan_off" else None)
        paid = [p for p in (offer.plans if offer else ()) if not p.trial]
        markup = None
        if offer is not None and paid:
            markup = {
                "inline_keyboard": [
                    [{"text": "See the plans", "callback_data": f"plan:{offer.channel_id}"}]
                ]
            }
        return _edited(visit.update, f"No free trial: {escape_html(outcome)}.", markup)


class _AccessCode:
    """`/start code_<code>`, or the code sent as a message: its free days through billing's
    grants path; the invite link follows from billing's access event."""

    def __init__(self, billing: BillingClient) -> None:
        self.billing = billing

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> dict[str, Any] | str:
        if not ACCESS_CODE.fullmatch(arg):
            return CODE_REFUSED
        return await self.billing.redeem(update.sender_id, arg)

    async def apply(
        self, conn: Connection, visit: Visit, redeemed: dict[str, Any] | str
    ) -> list[Reply]:
        if isinstance(redeemed, str):
            return [html_message(visit.update.chat_key, redeemed)]
        until = str(redeemed["membership"]["expires_at"])[:10]
        days = int(redeemed["days"])
        text = (
            f"Your code gives you {days} day{'s' if days != 1 else ''} of "
            f"<b>{escape_html(str(redeemed['title']))}</b>: access until {until}. Your invite "
            "link comes here in a moment."
        )
        return [html_message(visit.update.chat_key, text)]
