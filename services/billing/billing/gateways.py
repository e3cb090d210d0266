"""The payment gateways billing knows: the one list of their names, the name a person reads,
and where each one's checkout is by default; and Telegram Stars beside them. Settings, the
verifiers and `GET /internal/gateways` (which the bot reads) all come from here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Gateway:
    name: str
    title: str
    # The checkout URL template when `<NAME>_PAY_URL` is not set.
    pay_url: str


GATEWAYS = (
    Gateway("subgate", "Subgate", "https://pay.subgate.example/checkout/{order_reference}"),
    Gateway(
        "wayforpay",
        "WayForPay",
        "https://secure.wayforpay.com/pay?orderReference={order_reference}",
    ),
    Gateway("stripe", "Stripe", "https://checkout.stripe.com/c/pay/{order_reference}"),
)

# Telegram's own Stars: no webhook (botedge records the payments Telegram reports), no
# checkout page, and only for plans priced in Stars, which no other gateway takes.
STARS = Gateway("telegram_stars", "Telegram Stars", "")
STARS_CURRENCY = "XTR"

BY_NAME = {gateway.name: gateway for gateway in GATEWAYS}
# The name a person reads, Stars among them.
TITLES = {gateway.name: gateway.title for gateway in (*GATEWAYS, STARS)}
# The names a request may give, as a type (the OpenAPI enum): every gateway and Stars.
GatewayName = Literal["subgate", "wayforpay", "stripe", "telegram_stars"]
