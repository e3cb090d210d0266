"""What the bot asks billing before an invoice (`GET /internal/gateways`), and the simulated
checkout's refusals."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.testing import serve_in_thread
from simulators.checkout.app import create_app
from tests.billing.e2e import gateways
from tests.conftest import HTTP, SECRETS, Served, service_env

BEARER = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}


def test_gateways__the_ones_on_and_a_channels_offer(billing: Served, database_url: str) -> None:
    url = f"{billing.url}/internal/gateways"
    assert HTTP.get(url, headers=BEARER).json() == {
        "gateways": ["stripe", "subgate", "telegram_stars", "wayforpay"],
        "titles": {
            "stripe": "Stripe",
            "subgate": "Subgate",
            "telegram_stars": "Telegram Stars",
            "wayforpay": "WayForPay",
        },
    }
    channel = gateways.add_paid_channel(database_url, price_minor=1250, currency="UAH")
    offer = HTTP.get(url, params={"channel_id": channel}, headers=BEARER).json()["offer"]
    assert offer == {
        "channel_id": channel,
        "title": "Paid",
        "amount": "12.50",
        "currency": "UAH",
        "period_days": 30,
        "plans": [
            {
                "id": offer["plans"][0]["id"],
                "name": "default",
                "amount": "12.50",
                "currency": "UAH",
                "period_days": 30,
                "kind": "regular",
                "gateways": ["stripe", "subgate", "wayforpay"],
                "is_default": True,
                "channels": [],
            }
        ],
    }
    unknown = HTTP.get(url, params={"channel_id": channel + 1}, headers=BEARER).json()
    assert unknown["offer"] is None


def test_gateways__refused_without_the_token_or_with_a_bad_channel_id(
    billing: Served,
) -> None:
    url = f"{billing.url}/internal/gateways"
    unauthorized = HTTP.get(url)
    assert unauthorized.status_code == 401
    assert unauthorized.headers["content-type"] == "application/problem+json"
    for bad in ("abc", "0", "-3", str(2**31), ""):
        answer = HTTP.get(url, params={"channel_id": bad}, headers=BEARER)
        assert answer.status_code == 422, (bad, answer.text)
        assert answer.headers["content-type"] == "application/problem+json"
    assert HTTP.get(url, params={"other": "1"}, headers=BEARER).status_code == 422


@pytest.fixture
def checkout(database_url: str) -> Iterator[str]:
    # Billing is never reached here: every request below is refused first, or sends nothing.
    env = service_env(database_url, BILLING_URL="http://127.0.0.1:9")
    with serve_in_thread(create_app(env)) as url:
        yield url


def test_checkout__malformed_links_are_refused(checkout: str) -> None:
    good = {"amount": "12.50", "currency": "UAH"}
    assert HTTP.get(f"{checkout}/checkout/subgate/gh_abc", params=good).status_code == 200
    for path, params in (
        ("/checkout/paypal/gh_abc", good),
        ("/checkout/subgate/gh_abc", {"amount": "12.5.0", "currency": "UAH"}),
        ("/checkout/subgate/gh_abc", {"amount": "12.50", "currency": "XXQ"}),
        ("/checkout/subgate/<script>", good),
    ):
        answer = HTTP.get(f"{checkout}{path}", params=params)
        assert answer.status_code == 404, path
        assert "<script>" not in answer.text
    wrong_action = HTTP.post(f"{checkout}/checkout/subgate/gh_abc", data={**good, "action": "x"})
    assert wrong_action.status_code == 400


def test_checkout__a_subgate_decline_sends_nothing_and_says_so(checkout: str) -> None:
    answer = HTTP.post(
        f"{checkout}/checkout/subgate/gh_abc",
        data={"amount": "12.50", "currency": "UAH", "action": "decline"},
    )
    assert answer.status_code == 200
    assert "The payment was declined" in answer.text
    assert HTTP.get(f"{checkout}/_sim/outcomes").json() == [
        {"order_reference": "gh_abc", "gateway": "subgate", "action": "decline", "billing": None}
    ]


def test_checkout__a_script_posts_only_the_action_to_the_payment_link(checkout: str) -> None:
    """The link carries amount and currency; a script needs no form fields beyond `action`."""
    answer = HTTP.post(
        f"{checkout}/checkout/subgate/gh_script?amount=12.50&currency=UAH",
        data={"action": "decline"},
    )
    assert answer.status_code == 200 and "The payment was declined" in answer.text
    outcome = HTTP.get(f"{checkout}/_sim/outcomes").json()[-1]
    assert outcome == {
        "order_reference": "gh_script",
        "gateway": "subgate",
        "action": "decline",
        "billing": None,
    }
