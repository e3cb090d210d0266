"""The simulated checkout: the page a gateway's `pay_url` opens, with Pay and Decline.

`make run` points every `<GATEWAY>_PAY_URL` here:
`/checkout/<gateway>/{order_reference}?amount={amount}&currency={currency}`. Pay posts the
gateway's payment callback to billing, signed with that gateway's scheme and the same secrets
billing checks; Decline posts its not-a-payment status (WayForPay `Declined`, Stripe
`checkout.session.async_payment_failed`; Subgate, our own scheme, sends nothing for a declined
card). The page then says what happened. `GET /_sim/outcomes` lists every press, for tests.

Environment: `BILLING_URL`, `SUBGATE_WEBHOOK_SECRET`, `WAYFORPAY_MERCHANT_ACCOUNT`,
`WAYFORPAY_SECRET_KEY`, `STRIPE_WEBHOOK_SECRET` (the first of a list).
"""

from __future__ import annotations

import html
import os
import re
import secrets
from collections.abc import Callable, Mapping
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from shared.tls import verified
from shared.web import create_plain_app
from simulators.checkout import callbacks

_REFERENCE = re.compile(r"[A-Za-z0-9_-]{1,64}", re.ASCII)
# What the simulated gateways take: the hryvnia, the common card currencies, and the yen for a
# currency without minor units.
CURRENCIES = frozenset("UAH USD EUR GBP PLN KZT TRY CAD AUD CHF INR BRL JPY".split())
_AMOUNT = re.compile(r"[0-9]{1,12}(\.[0-9]{1,4})?", re.ASCII)

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}}
button{{font-size:1rem;padding:.6rem 1.2rem;margin-right:.5rem}}</style></head>
<body><h1>{title}</h1>{body}</body></html>"""


def page(title: str, body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(PAGE.format(title=html.escape(title), body=body), status_code=status)


class Checkout:
    def __init__(self, env: Mapping[str, str]) -> None:
        self.billing = env.get("BILLING_URL", "http://127.0.0.1:8001").rstrip("/")
        self.env = env
        self.outcomes: list[dict[str, Any]] = []

    def callback(
        self, gateway: str, order: str, amount: str, currency: str, paid: bool
    ) -> callbacks.Callback | None:
        return PRESS[gateway](self.env, order, amount, currency, paid)


def _subgate(
    env: Mapping[str, str], order: str, amount: str, currency: str, paid: bool
) -> callbacks.Callback | None:
    if not paid:
        return None
    payment = "sim_" + secrets.token_urlsafe(9)
    return callbacks.subgate(env["SUBGATE_WEBHOOK_SECRET"], order, payment, amount, currency)


def _wayforpay(
    env: Mapping[str, str], order: str, amount: str, currency: str, paid: bool
) -> callbacks.Callback:
    merchant, key = env["WAYFORPAY_MERCHANT_ACCOUNT"], env["WAYFORPAY_SECRET_KEY"]
    status = "Approved" if paid else "Declined"
    return callbacks.wayforpay(merchant, key, order, amount, currency, status)


def _stripe(
    env: Mapping[str, str], order: str, amount: str, currency: str, paid: bool
) -> callbacks.Callback:
    return callbacks.stripe(
        env["STRIPE_WEBHOOK_SECRET"].split(",")[0].strip(),
        order,
        "pi_sim_" + secrets.token_urlsafe(9),
        callbacks.minor(amount, currency),
        currency.lower(),
        kind="checkout.session.completed" if paid else "checkout.session.async_payment_failed",
        payment_status="paid" if paid else "unpaid",
    )


# What pressing Pay or Decline sends, per gateway. Its keys are billing's gateway names (a test
# holds them to billing's registry); the code behind each is the simulator's own.
PRESS: dict[str, Callable[[Mapping[str, str], str, str, str, bool], callbacks.Callback | None]] = {
    "subgate": _subgate,
    "wayforpay": _wayforpay,
    "stripe": _stripe,
}


def _invoice(request: Request, values: Mapping[str, Any]) -> tuple[str, str, str, str] | None:
    """(gateway, order reference, amount, currency) when they are well formed."""
    gateway = request.path_params["gateway"]
    order = request.path_params["order_reference"]
    amount = str(values.get("amount", ""))
    currency = str(values.get("currency", "")).upper()
    if gateway not in PRESS or not _REFERENCE.fullmatch(order):
        return None
    if currency not in CURRENCIES or not _AMOUNT.fullmatch(amount):
        return None
    return gateway, order, amount, currency


def create_app(env: Mapping[str, str] | None = None) -> Starlette:
    checkout = Checkout(os.environ if env is None else env)

    async def show(request: Request) -> Response:
        invoice = _invoice(request, request.query_params)
        if invoice is None:
            return page("Unknown invoice", "<p>This payment link is not valid.</p>", 404)
        gateway, order, amount, currency = invoice
        fields = (
            f'<input type="hidden" name="amount" value="{html.escape(amount)}">'
            f'<input type="hidden" name="currency" value="{html.escape(currency)}">'
        )
        body = (
            f"<p>Invoice <code>{html.escape(order)}</code></p>"
            f"<p><strong>{html.escape(amount)} {html.escape(currency)}</strong>"
            f" with {html.escape(gateway)} (simulated)</p>"
            f'<form method="post">{fields}'
            '<button name="action" value="pay">Pay</button>'
            '<button name="action" value="decline">Decline</button></form>'
        )
        return page("Checkout", body)

    async def press(request: Request) -> Response:
        # The page's form repeats the link's amount and currency; a script may post only
        # `action` to the link itself.
        values: dict[str, str] = dict(request.query_params)
        async with request.form(max_fields=10, max_files=0) as form:
            values.update((key, value) for key, value in form.items() if isinstance(value, str))
        invoice = _invoice(request, values)
        action = values.get("action")
        if invoice is None or action not in ("pay", "decline"):
            return page("Unknown invoice", "<p>This payment link is not valid.</p>", 400)
        gateway, order, amount, currency = invoice
        paid = action == "pay"
        sent = checkout.callback(gateway, order, amount, currency, paid)
        status: int | None = None
        if sent is not None:
            try:
                async with httpx.AsyncClient(timeout=10, verify=verified()) as client:
                    status = (await sent.send_async(client, checkout.billing)).status_code
            except httpx.HTTPError as error:
                checkout.outcomes.append({"order_reference": order, "error": str(error)})
                return page("Not delivered", "<p>Billing could not be reached.</p>", 502)
        checkout.outcomes.append(
            {"order_reference": order, "gateway": gateway, "action": action, "billing": status}
        )
        if not paid:
            return page("Payment declined", "<p>The payment was declined. Nothing was charged.</p>")
        if status != 200:
            return page("Not accepted", f"<p>Billing answered {status}.</p>", 502)
        return page(
            "Payment done",
            "<p>Paid. You can close this page: the bot sends your invite link.</p>",
        )

    async def outcomes(request: Request) -> Response:
        return JSONResponse(checkout.outcomes)

    return create_plain_app(
        [
            Route("/checkout/{gateway}/{order_reference}", show, methods=["GET"]),
            Route("/checkout/{gateway}/{order_reference}", press, methods=["POST"]),
            Route("/_sim/outcomes", outcomes, methods=["GET"]),
        ],
        body_limit=16 * 1024,
    )
