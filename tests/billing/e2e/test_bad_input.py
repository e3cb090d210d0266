"""Every bad delivery gets a 4xx problem+json, and nothing is written."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx
import psycopg
import pytest

from billing.webhooks import Stripe, Subgate
from tests.billing.e2e import gateways
from tests.conftest import SECRETS, ServiceProcess, service_env

SUBGATE = "/v1/webhooks/payments/subgate"
STRIPE = "/v1/webhooks/payments/stripe"


def signed_subgate(**overrides: object) -> bytes:
    payload: dict[str, object] = {
        "orderReference": "gh_x",
        "externalPaymentId": "p1",
        "amount": "12.50",
        "currency": "USD",
        "timestamp": int(time.time()),
    }
    payload.update(overrides)
    payload["signature"] = Subgate.sign(SECRETS["SUBGATE_WEBHOOK_SECRET"], payload)
    return json.dumps(payload).encode()


def tampered() -> bytes:
    body = json.loads(signed_subgate())
    body["amount"] = "0.01"
    return json.dumps(body).encode()


CASES = [
    ("malformed json", SUBGATE, b'{"orderReference": ', {}, 400, "malformed-json"),
    ("not an object", SUBGATE, b'"text"', {}, 422, "invalid-body"),
    (
        "missing field",
        SUBGATE,
        json.dumps({"orderReference": "x"}).encode(),
        {},
        422,
        "invalid-body",
    ),
    ("wrong type", SUBGATE, signed_subgate(timestamp="yesterday"), {}, 422, "invalid-body"),
    (
        "bad signature",
        SUBGATE,
        signed_subgate().replace(b'"signature": "', b'"signature": "0'),
        {},
        401,
        "bad-signature",
    ),
    ("tampered amount", SUBGATE, tampered(), {}, 401, "bad-signature"),
    (
        "stale timestamp",
        SUBGATE,
        signed_subgate(timestamp=int(time.time()) - 600),
        {},
        401,
        "stale-timestamp",
    ),
    (
        "future timestamp",
        SUBGATE,
        signed_subgate(timestamp=int(time.time()) + 600),
        {},
        401,
        "stale-timestamp",
    ),
    ("bad currency", SUBGATE, signed_subgate(currency="XXQ"), {}, 422, "invalid-body"),
    (
        "unknown gateway",
        "/v1/webhooks/payments/paypal",
        signed_subgate(),
        {},
        404,
        "unknown-gateway",
    ),
    ("too large", SUBGATE, b'{"pad": "' + b"x" * (64 * 1024) + b'"}', {}, 413, "body-too-large"),
    ("stripe without signature", STRIPE, b"{}", {}, 401, "bad-signature"),
    (
        "stripe stale",
        STRIPE,
        b'{"type": "x"}',
        {
            "stripe-signature": Stripe.header(
                SECRETS["STRIPE_WEBHOOK_SECRET"], b'{"type": "x"}', int(time.time()) - 400
            )
        },
        401,
        "stale-timestamp",
    ),
]


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "slug"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_bad_delivery__4xx_problem_and_nothing_written(
    billing: ServiceProcess,
    database_url: str,
    path: str,
    body: bytes,
    headers: dict[str, str],
    status: int,
    slug: str,
) -> None:
    response = httpx.post(billing.url + path, content=body, headers=headers)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"] == f"/problems/{slug}"
    assert "Traceback" not in response.text
    with psycopg.connect(database_url) as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM payments), (SELECT count(*) FROM gateway_events),"
            " (SELECT count(*) FROM memberships)"
        ).fetchone()
    assert counts == (0, 0, 0)


def test_gateway_off__404(start_service: Callable[..., ServiceProcess], database_url: str) -> None:
    env = service_env(database_url, SUBGATE_WEBHOOK_SECRET="", STRIPE_WEBHOOK_SECRET="")
    billing = start_service("billing", env=env)
    for path in (SUBGATE, STRIPE):
        response = httpx.post(billing.url + path, content=signed_subgate())
        assert response.status_code == 404
        assert response.json()["type"] == "/problems/unknown-gateway"
    channel = gateways.add_paid_channel(database_url)
    with httpx.Client() as client:
        refused = client.post(
            f"{billing.url}/internal/invoices",
            json={"telegram_user_id": 1, "channel_id": channel, "gateway": "subgate"},
            headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
        )
    assert refused.status_code == 422
