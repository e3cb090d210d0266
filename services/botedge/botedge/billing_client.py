"""billing's internal endpoints as the bot's pay flows use them: a channel's offer, invoices,
Stars pre-checkout, trials and access codes. Any answer that retrying could change is
`RetryLater`, so the update waits and its person is told once (`WAITING`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from botedge.errors import RetryLater
from botedge.telegram import KEEPALIVE_SECONDS
from botedge.text import money
from botedge.updates import InboxRow
from botedge.words import Msg, Speech, msg
from shared.breaker import Breakers
from shared.internal import InternalClient, Unreachable
from shared.settings import Secret
from shared.tls import verified

CODE_REFUSED = msg("code.refused", "That code is unknown, used up or expired.")
CODE_USED = msg("code.used", "You have used this code already.")
TOO_MANY_CODES = msg(
    "code.too_many",
    "Too many wrong codes: try again in {count} min.",
    "Too many wrong codes: try again in {count} min.",
)


@dataclass(frozen=True)
class CodeRefusal:
    """What to tell a person whose access code did not open anything; `minutes` for a wait."""

    message: Msg
    minutes: int | None = None

    def said(self, say: Speech) -> str:
        return say(self.message) if self.minutes is None else say(self.message, self.minutes)


# billing's name for Telegram Stars, and Telegram's limits on a Stars subscription.
STARS = "telegram_stars"
STARS_SUBSCRIPTION_PERIOD = 30 * 86400
STARS_SUBSCRIPTION_CAP = 10_000

# Told once to a person whose press waits on billing while it cannot be reached; the outcome
# follows as a new message when it can.
DAYS = msg("days", "{count} day", "{count} days")
FREE_FOR = msg("price.trial", "free for {days}, once")
MONEY_FOR = msg("price.paid", "{money} for {days}")


WAITING = msg(
    "pay.waiting",
    "Payments are not answering right now. We are on it: you will get your answer here as "
    "soon as they are back, no need to press again.",
)


@dataclass(frozen=True)
class PlanOffer:
    id: int
    name: str
    amount: str
    currency: str
    period_days: int
    # The gateways it is sold through, of those billing has on; none for a trial.
    gateways: tuple[str, ...]
    kind: str = "regular"
    # A bundle's channels, by title: one payment opens each.
    channels: tuple[str, ...] = ()

    @property
    def trial(self) -> bool:
        return self.kind == "trial"

    @property
    def subscribable(self) -> bool:
        """Telegram renews Stars subscriptions every 30 days, at up to 10,000 Stars."""
        return (
            STARS in self.gateways
            and self.period_days == 30
            and self.amount.isdigit()
            and int(self.amount) <= STARS_SUBSCRIPTION_CAP
        )

    def price(self, say: Speech) -> str:
        days = say(DAYS, self.period_days)
        if self.trial:
            return say(FREE_FOR, days=days)
        return say(MONEY_FOR, money=money(say, self.amount, self.currency), days=days)


@dataclass(frozen=True)
class Offer:
    channel_id: int
    title: str
    # On sale and payable through at least one gateway that is on, in the owner's order.
    plans: tuple[PlanOffer, ...]
    # Each gateway's name as people read it, as billing's registry gives it.
    titles: dict[str, str] = field(default_factory=dict)

    def gateway_title(self, gateway: str) -> str:
        return self.titles.get(gateway, gateway)

    def plan(self, plan_id: int) -> PlanOffer | None:
        return next((p for p in self.plans if p.id == plan_id), None)


@dataclass(frozen=True)
class Invoice:
    # None for Stars, paid inside Telegram.
    pay_url: str | None
    amount: str
    currency: str
    gateway: str
    # The plan's price and the coupon's code, when a coupon took something off.
    list_price: str | None = None
    coupon: str | None = None
    # Our order reference: a Stars invoice's payload.
    order_reference: str = ""


@dataclass(frozen=True)
class CouponRefused:
    # billing's words for why ("the coupon has expired").
    detail: str


def billing_http() -> httpx.AsyncClient:
    """The worker's client for `BillingClient`: few calls, so httpx, its connections kept as
    long as the Bot API's."""
    return httpx.AsyncClient(
        limits=httpx.Limits(keepalive_expiry=KEEPALIVE_SECONDS), verify=verified()
    )


def asked_by(update: InboxRow) -> str:
    """The key of the invoice an update asks for: the same however often it is retried."""
    return f"botedge:{update.id}"


class BillingClient:
    """billing's internal endpoints, with the service token, behind billing's breaker. Any
    answer that retrying could change (unreachable, timeout, 5xx, 429) is `RetryLater`, which
    tells the person waiting that we are on it (`WAITING`); while the breaker is open the call
    is not made and the update is parked."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        token: Secret,
        breakers: Breakers | None = None,
    ) -> None:
        self.calls = InternalClient("billing", base_url, token, breakers, client)

    async def _call(
        self, method: str, path: str, *, timeout: float = 10.0, **kwargs: Any
    ) -> httpx.Response:
        try:
            response = await self.calls.request(method, path, timeout=timeout, **kwargs)
        except Unreachable as error:
            raise RetryLater(
                error.detail, error.retry_after, parked=error.parked, notice=WAITING
            ) from None
        if response.status_code >= 500 or response.status_code == 429:
            raise RetryLater(f"billing {path}: {response.status_code}", notice=WAITING)
        return response

    async def offer(self, channel_id: int) -> Offer | None:
        """The channel's price and the gateways on; None when it is not a paid channel."""
        response = await self._call("GET", "/internal/gateways", params={"channel_id": channel_id})
        if response.status_code != 200:
            raise RetryLater(f"billing /internal/gateways: {response.status_code}")
        body = response.json()
        offer = body.get("offer")
        if not isinstance(offer, dict):
            return None
        plans = (
            PlanOffer(
                int(plan["id"]),
                str(plan["name"]),
                str(plan["amount"]),
                str(plan["currency"]),
                int(plan["period_days"]),
                tuple(str(g) for g in plan["gateways"]),
                str(plan.get("kind") or "regular"),
                tuple(str(title) for title in plan.get("channels") or ()),
            )
            for plan in offer.get("plans") or ()
        )
        return Offer(
            channel_id,
            str(offer["title"]),
            tuple(plan for plan in plans if plan.gateways or plan.trial),
            {str(k): str(v) for k, v in (body.get("titles") or {}).items()},
        )

    async def pre_checkout(
        self, telegram_user_id: int, payload: str, currency: str, total: int, *, timeout: float
    ) -> str | None:
        """None when Telegram may take the Stars; else billing's reason why not."""
        response = await self._call(
            "POST",
            "/internal/stars/pre-checkout",
            json={
                "telegram_user_id": telegram_user_id,
                "invoice_payload": payload[:128],
                "currency": currency if len(currency) == 3 else "???",
                "total_amount": total,
            },
            timeout=timeout,
        )
        if response.status_code == 422:
            return "unknown"
        if response.status_code != 200:
            raise RetryLater(f"billing /internal/stars/pre-checkout: {response.status_code}")
        body = response.json()
        return None if body.get("ok") is True else str(body.get("reason") or "unknown")

    async def trial(self, telegram_user_id: int, channel_id: int, plan_id: int) -> str:
        """The channel's free trial taken ("started"), or why not: billing's words when the
        person had it, "plan_off" when it is not on sale."""
        response = await self._call(
            "POST",
            "/internal/trials",
            json={
                "telegram_user_id": telegram_user_id,
                "channel_id": channel_id,
                "plan_id": plan_id,
            },
        )
        if response.status_code == 201:
            return "started"
        if response.status_code == 409:
            return str(response.json().get("detail") or "you have had it already")
        if response.status_code == 404:
            return "plan_off"
        raise RetryLater(f"billing /internal/trials: {response.status_code}")

    async def redeem(self, telegram_user_id: int, code: str) -> dict[str, Any] | CodeRefusal:
        """An access code's grant (`{"title", "days", "membership"}`), or what to tell the
        person instead."""
        response = await self._call(
            "POST",
            "/internal/access-codes/redeem",
            json={"telegram_user_id": telegram_user_id, "code": code},
        )
        if response.status_code == 200:
            return dict(response.json())
        if response.status_code == 422:
            used = {"field": "code", "code": "taken"} in (response.json().get("errors") or [])
            return CodeRefusal(CODE_USED if used else CODE_REFUSED)
        if response.status_code == 429:
            minutes = -(-int(response.headers.get("retry-after", "600")) // 60)
            return CodeRefusal(TOO_MANY_CODES, minutes)
        raise RetryLater(f"billing /internal/access-codes/redeem: {response.status_code}")

    async def invoice(
        self,
        telegram_user_id: int,
        channel_id: int,
        gateway: str,
        plan_id: int,
        coupon: str | None = None,
        request_key: str | None = None,
    ) -> Invoice | CouponRefused | str:
        """A new invoice, or why there is none: the coupon's refusal, "not_paid", "plan_off"
        or "gateway_off". Asked again under the same `request_key` (`asked_by`), billing
        answers the invoice it made the first time."""
        asked: dict[str, Any] = {
            "telegram_user_id": telegram_user_id,
            "channel_id": channel_id,
            "gateway": gateway,
            "plan_id": plan_id,
        }
        if coupon is not None:
            asked["coupon"] = coupon
        if request_key is not None:
            asked["request_key"] = request_key
        response = await self._call("POST", "/internal/invoices", json=asked)
        problem = response.json() if response.status_code in (404, 422) and response.content else {}
        if response.status_code == 404:
            return "plan_off" if problem.get("type") == "/problems/unknown-plan" else "not_paid"
        if response.status_code == 422:
            if problem.get("type") == "/problems/coupon-refused":
                return CouponRefused(str(problem.get("detail") or "it does not apply"))
            return "gateway_off"
        if response.status_code != 201:
            raise RetryLater(f"billing /internal/invoices: {response.status_code}")
        body = response.json()
        # A coupon that took nothing off (a percentage of a few minor units) is not shown.
        off = coupon is not None and body.get("list_price") != body["amount"]
        return Invoice(
            None if body.get("pay_url") is None else str(body["pay_url"]),
            str(body["amount"]),
            str(body["currency"]),
            gateway,
            str(body["list_price"]) if off else None,
            coupon.strip().upper() if off and coupon else None,
            str(body.get("order_reference") or ""),
        )
