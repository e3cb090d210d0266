"""Every bad delivery gets a 4xx problem+json, and nothing is written."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

import httpx
import psycopg
import pytest

from shared.tls import verified
from simulators.checkout.callbacks import stripe_header, subgate_signature
from tests.billing.e2e import gateways
from tests.conftest import HTTP, SECRETS, Serve, Served, serve_billing

SUBGATE = "/v1/webhooks/payments/subgate"
STRIPE = "/v1/webhooks/payments/stripe"
WAYFORPAY = "/v1/webhooks/payments/wayforpay"


def signed_subgate(**overrides: object) -> bytes:
    payload: dict[str, object] = {
        "orderReference": "gh_x",
        "externalPaymentId": "p1",
        "amount": "12.50",
        "currency": "USD",
        "timestamp": int(time.time()),
    }
    payload.update(overrides)
    payload["signature"] = subgate_signature(SECRETS["SUBGATE_WEBHOOK_SECRET"], payload)
    return json.dumps(payload).encode()


def unsigned_subgate(signature: object = None) -> bytes:
    body = json.loads(signed_subgate())
    if signature is None:
        del body["signature"]
    else:
        body["signature"] = signature
    return json.dumps(body).encode()


def tampered() -> bytes:
    body = json.loads(signed_subgate())
    body["amount"] = "0.01"
    return json.dumps(body).encode()


def with_raw(body: bytes, field: bytes, raw: bytes) -> bytes:
    """A signed body with one more field whose JSON text is `raw` (not what json.dumps writes)."""
    return body[:-1] + b', "' + field + b'": ' + raw + b"}"


def wayforpay_without_signature() -> bytes:
    body = json.loads(gateways.wayforpay("gh_x", "12.50").content)
    del body["merchantSignature"]
    return json.dumps(body).encode()


def signed_stripe(created: object) -> tuple[bytes, dict[str, str]]:
    event = {
        "type": "checkout.session.completed",
        "created": created,
        "data": {"object": {"client_reference_id": "gh_x"}},
    }
    body = json.dumps(event).encode()
    return body, {
        "stripe-signature": stripe_header(SECRETS["STRIPE_WEBHOOK_SECRET"], body, int(time.time()))
    }


Build = Callable[[], tuple[bytes, dict[str, str]]]


def body_only(make: Callable[[], bytes]) -> Build:
    return lambda: (make(), {})


# Each body is built inside the test: signed timestamps count from when it runs.
CASES: list[tuple[str, str, Build, int, str]] = [
    ("malformed json", SUBGATE, body_only(lambda: b'{"orderReference": '), 400, "malformed-json"),
    ("not an object", SUBGATE, body_only(lambda: b'"text"'), 422, "invalid-body"),
    (
        "missing field",
        SUBGATE,
        body_only(lambda: json.dumps({"signature": "ab12", "orderReference": "x"}).encode()),
        422,
        "invalid-body",
    ),
    (
        "wrong type",
        SUBGATE,
        body_only(lambda: signed_subgate(timestamp="yesterday")),
        422,
        "invalid-body",
    ),
    (
        "bad signature",
        SUBGATE,
        body_only(lambda: signed_subgate().replace(b'"signature": "', b'"signature": "0')),
        401,
        "bad-signature",
    ),
    ("missing signature", SUBGATE, body_only(unsigned_subgate), 401, "bad-signature"),
    ("empty signature", SUBGATE, body_only(lambda: unsigned_subgate("")), 401, "bad-signature"),
    (
        "signature not text",
        SUBGATE,
        body_only(lambda: unsigned_subgate(12)),
        401,
        "bad-signature",
    ),
    (
        "non-ascii signature",
        SUBGATE,
        body_only(lambda: unsigned_subgate("\u00e9" * 64)),
        401,
        "bad-signature",
    ),
    (
        "wayforpay missing signature",
        WAYFORPAY,
        body_only(wayforpay_without_signature),
        401,
        "bad-signature",
    ),
    ("tampered amount", SUBGATE, body_only(tampered), 401, "bad-signature"),
    (
        "lone surrogate in a signed field",
        SUBGATE,
        body_only(lambda: signed_subgate().replace(b'"gh_x"', b'"gh_\\ud800"')),
        400,
        "malformed-json",
    ),
    (
        "NaN",
        SUBGATE,
        body_only(lambda: with_raw(signed_subgate(), b"fee", b"NaN")),
        400,
        "malformed-json",
    ),
    (
        "Infinity",
        SUBGATE,
        body_only(lambda: with_raw(signed_subgate(), b"fee", b"-Infinity")),
        400,
        "malformed-json",
    ),
    (
        "number beyond a float",
        SUBGATE,
        body_only(lambda: with_raw(signed_subgate(), b"fee", b"1e400")),
        400,
        "malformed-json",
    ),
    (
        "integer beyond the digit limit",
        SUBGATE,
        body_only(lambda: with_raw(signed_subgate(), b"fee", b"9" * 5000)),
        400,
        "malformed-json",
    ),
    (
        "nested too deeply",
        SUBGATE,
        body_only(lambda: with_raw(signed_subgate(), b"fee", b"[" * 5000 + b"]" * 5000)),
        400,
        "malformed-json",
    ),
    (
        "amount in other digits",
        SUBGATE,
        body_only(lambda: signed_subgate(amount="1\u0660\u0660.\u0660\u0660")),
        422,
        "invalid-body",
    ),
    (
        "amount with a trailing newline",
        SUBGATE,
        body_only(lambda: signed_subgate(amount="12.50\n")),
        422,
        "invalid-body",
    ),
    (
        "stale timestamp",
        SUBGATE,
        body_only(lambda: signed_subgate(timestamp=int(time.time()) - 600)),
        401,
        "stale-timestamp",
    ),
    (
        "future timestamp",
        SUBGATE,
        body_only(lambda: signed_subgate(timestamp=int(time.time()) + 600)),
        401,
        "stale-timestamp",
    ),
    (
        "bad currency",
        SUBGATE,
        body_only(lambda: signed_subgate(currency="XXQ")),
        422,
        "invalid-body",
    ),
    (
        "unknown gateway",
        "/v1/webhooks/payments/paypal",
        body_only(signed_subgate),
        404,
        "unknown-gateway",
    ),
    (
        "too large",
        SUBGATE,
        body_only(lambda: b'{"pad": "' + b"x" * (64 * 1024) + b'"}'),
        413,
        "body-too-large",
    ),
    ("stripe without signature", STRIPE, body_only(lambda: b"{}"), 401, "bad-signature"),
    (
        "stripe stale",
        STRIPE,
        lambda: (
            b'{"type": "x"}',
            {
                "stripe-signature": stripe_header(
                    SECRETS["STRIPE_WEBHOOK_SECRET"], b'{"type": "x"}', int(time.time()) - 400
                )
            },
        ),
        401,
        "stale-timestamp",
    ),
    ("stripe created out of range", STRIPE, lambda: signed_stripe(10**15), 422, "invalid-body"),
    ("stripe created negative", STRIPE, lambda: signed_stripe(-(10**15)), 422, "invalid-body"),
]


@pytest.mark.parametrize(
    ("path", "build", "status", "slug"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_bad_delivery__4xx_problem_and_nothing_written(
    billing: Served,
    caplog: pytest.LogCaptureFixture,
    database_url: str,
    path: str,
    build: Build,
    status: int,
    slug: str,
) -> None:
    body, headers = build()
    response = HTTP.post(billing.url + path, content=body, headers=headers)
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
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_gateway_off__404(serve: Serve, database_url: str) -> None:
    billing = serve_billing(
        serve, database_url, SUBGATE_WEBHOOK_SECRET="", STRIPE_WEBHOOK_SECRET=""
    )
    for path in (SUBGATE, STRIPE):
        response = HTTP.post(billing.url + path, content=signed_subgate())
        assert response.status_code == 404
        assert response.json()["type"] == "/problems/unknown-gateway"
    channel = gateways.add_paid_channel(database_url)
    with httpx.Client(verify=verified()) as client:
        refused = client.post(
            f"{billing.url}/internal/invoices",
            json={"telegram_user_id": 1, "channel_id": channel, "gateway": "subgate"},
            headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
        )
    assert refused.status_code == 422


@pytest.mark.parametrize("since", ["1", "1700000000", "2026-13", "yesterday"])
def test_reconcile_since__only_an_rfc_3339_time_a_number_is_not_read_as_epoch_seconds(
    billing: Served, since: str
) -> None:
    answer = HTTP.get(
        f"{billing.url}/internal/reconcile",
        params={"since": since},
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["errors"] == [{"field": "since", "code": "bad-format"}]
