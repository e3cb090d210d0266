"""The simulators are part of the product: every endpoint, control or API, answers a
malformed, empty, deeply nested, wrongly typed or invalid-UTF-8 body with a 4xx, as the
services do."""

from __future__ import annotations

import re
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from simulators.checkout.app import create_app as checkout_app
from simulators.telegram.app import create_app as telegram_app
from simulators.trongrid.app import create_app as trongrid_app
from tests.conftest import HTTP, Serve

JSON = {"content-type": "application/json"}
BODIES: list[tuple[bytes, dict[str, str]]] = [
    (b"{not json", JSON),
    (b"", JSON),
    (b"[]", JSON),
    (b'"text"', JSON),
    (b"null", JSON),
    (b"{}", JSON),
    (b"[" * 5000 + b"]" * 5000, JSON),
    (b'{"a": "\xff\xfe"}', JSON),
    (b'{"token": {}, "bot_id": "x", "user_id": [], "chat_id": "abc", "text": 5}', JSON),
    (b'{"user_id": 1e400, "chat_id": 99999999999999999999999999, "id": null}', JSON),
    (b'{"updates": 7, "messages": "x", "members": [1], "down": 3}', JSON),
    (b"user_id=abc&chat_id=&token=", {"content-type": "application/x-www-form-urlencoded"}),
]


def control_calls(app: Starlette) -> list[tuple[str, str]]:
    """Every route and method but health and metrics, with a path parameter filled in badly."""
    calls = []
    for route in app.routes:
        if isinstance(route, Route) and route.path not in ("/healthz", "/readyz", "/metrics"):
            path = re.sub(r"\{[^}]+\}", "abc", route.path)
            calls += [(method, path) for method in sorted(route.methods or ()) if method != "HEAD"]
    return calls


@pytest.mark.parametrize(
    "make", [telegram_app, trongrid_app, checkout_app], ids=lambda f: f.__module__.split(".")[1]
)
def test_control_endpoints__bad_bodies_answer_4xx_never_5xx(serve: Serve, make: Any) -> None:
    app = make()
    url = serve(app).url
    calls = control_calls(app)
    assert len(calls) >= 2
    failures = []
    refused = 0
    for method, path in calls:
        for body, headers in BODIES:
            answer = HTTP.request(
                method, f"{url}{path}?bot_id=x&chat_id=y", content=body, headers=headers
            )
            if answer.status_code >= 500:
                failures.append(f"{method} {path} {body[:40]!r}: {answer.text[:120]}")
            elif answer.status_code >= 400:
                kind = answer.headers["content-type"]
                # A page a person opens answers in HTML; the rest in JSON.
                assert kind.startswith(
                    ("application/problem+json", "application/json", "text/html")
                ), path
                assert "Traceback" not in answer.text
            refused += answer.status_code >= 400
    assert failures == []
    # The bodies reached the handlers, which refused them: not every answer a 404 or a 2xx.
    assert refused >= len(BODIES)


def test_bot_api__bad_bodies_from_a_known_bot_answer_telegrams_4xx(serve: Serve) -> None:
    """The Bot API's calls are answered ahead of the app's middleware (for speed): with a
    token the simulator knows, the bodies reach the methods, and each refusal is Telegram's
    `{"ok": false, "error_code", "description"}`, an oversized body too."""
    url = serve(telegram_app()).url
    token = "7000001:AA" + "b" * 33
    HTTP.post(f"{url}/_sim/bots", json={"token": token}).raise_for_status()
    failures = []
    for method in ("sendMessage", "getChatMember", "getUpdates", "setWebhook", "editMessageText"):
        for body, headers in BODIES:
            answer = HTTP.post(f"{url}/bot{token}/{method}", content=body, headers=headers)
            if answer.status_code >= 500:
                failures.append(f"{method} {body[:40]!r}: {answer.text[:120]}")
            elif answer.status_code >= 400:
                said = answer.json()
                assert said["ok"] is False and said["error_code"] == answer.status_code
                assert said["description"]
            elif method == "sendMessage":
                failures.append(f"sendMessage took {body[:40]!r}")
    assert failures == []
    too_big = HTTP.post(
        f"{url}/bot{token}/sendMessage", content=b"x" * (50 * 1024 * 1024 + 1), headers=JSON
    )
    assert too_big.status_code == 413
    assert too_big.json()["description"] == "Request Entity Too Large"
    # Every call is in the simulator's log, as a call through the app would be.
    calls = HTTP.get(f"{url}/_sim/calls").json()
    assert len(calls) == 5 * len(BODIES) + 1
