"""A paid channel sold from the bot, with billing and the simulated checkout beside it: what
the paying tests share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.billing.e2e import gateways
from tests.botedge.e2e.conftest import Edge
from tests.conftest import ServiceProcess, free_port, service_env

PAID = -1001000000501
BOT = 5550501
BUYER = 7301


@dataclass
class Store:
    edge: Edge
    checkout: ServiceProcess
    channel: int
    billing: ServiceProcess
    start: Callable[..., ServiceProcess]

    def button(self, gateway: str) -> str:
        """A gateway's button for the channel's one plan."""
        [(plan,)] = self.edge.query("SELECT id FROM plans WHERE channel_id = %s", self.channel)
        return f"pay:{self.channel}:{gateway}:{plan}"

    def restart_billing(self, *without: str) -> None:
        if self.billing.proc.poll() is None:
            self.billing.proc.kill()
            self.billing.proc.wait()
        port = int(self.billing.url.rsplit(":", 1)[1])
        env = {k: v for k, v in self.billing_env().items() if k not in without}
        self.billing = self.start("billing", env=env, port=port)

    def billing_env(self) -> dict[str, str]:
        return service_env(self.edge.database_url, **checkout_env(self.checkout.url))

    def say(self, text: str, user: int = BUYER, language: str | None = None) -> None:
        """A message from `user`; with `language`, their Telegram language from then on."""
        message: dict[str, Any] = {"bot_id": BOT, "user_id": user, "text": text}
        if language is not None:
            message["language_code"] = language
        self.edge.sim_post("/_sim/messages", message)

    def sent(self, user: int = BUYER) -> list[dict[str, Any]]:
        return list(self.edge.sim_get("/_sim/sent", chat_id=user))

    def press(self, message_id: int, data: str, user: int = BUYER) -> None:
        self.edge.sim_post(
            "/_sim/press",
            {"bot_id": BOT, "user_id": user, "message_id": message_id, "data": data},
        )

    def edits(self) -> list[dict[str, Any]]:
        rows = self.edge.query(
            "SELECT payload FROM outbox WHERE method = 'editMessageText' AND state = 'sent'"
            " ORDER BY id"
        )
        return [row[0] for row in rows]

    def pay_link(self, gateway: str) -> str:
        """/start pay_<id>, the gateway's button, the link the message is edited to."""
        self.say(f"/start pay_{self.channel}")
        self.edge.wait_until(lambda: bool(self.sent()), 30, "the offer")
        offer = self.sent()[-1]
        self.press(offer["message_id"], self.button(gateway))
        self.edge.wait_until(lambda: bool(self.edits()), 30, "the pay link")
        [pay], _coupon = self.edits()[-1]["reply_markup"]["inline_keyboard"]
        return str(pay["url"])


def checkout_env(checkout: str) -> dict[str, str]:
    return {
        f"{gateway.upper()}_PAY_URL": (
            f"{checkout}/checkout/{gateway}/{{order_reference}}"
            "?amount={amount}&currency={currency}"
        )
        for gateway in ("subgate", "wayforpay", "stripe")
    }


def open_store(
    edge: Edge, start_service: Callable[..., ServiceProcess], database_url: str
) -> Store:
    """Billing and the checkout started, a polling bot managing a paid channel in UAH."""
    billing_port = free_port()
    billing_url = f"http://127.0.0.1:{billing_port}"
    checkout = start_service(
        "simulators.checkout", env=service_env(database_url, BILLING_URL=billing_url)
    )
    billing = start_service(
        "billing",
        env=service_env(database_url, **checkout_env(checkout.url)),
        port=billing_port,
    )
    edge.extra_env["BILLING_URL"] = billing_url
    bot_id, _, _ = edge.add_bot(BOT, mode="polling")
    channel = gateways.add_paid_channel(database_url, chat_id=PAID, currency="UAH")
    edge.query("UPDATE channels SET manager_bot_id = %s RETURNING id", bot_id)
    edge.sim_post(
        "/_sim/chats", {"id": PAID, "type": "channel", "title": "Paid", "admin_bots": [BOT]}
    )
    return Store(edge, checkout, channel, billing, start_service)
