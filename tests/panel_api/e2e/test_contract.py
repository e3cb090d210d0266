"""The panel API against its own OpenAPI document: Schemathesis generates requests for every
route, as each role, over real HTTP, with billing, botedge and the simulated Telegram running
and every list holding rows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from http.cookiejar import DefaultCookiePolicy
from typing import Any

import httpx
import psycopg
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from panel_api import auth, first_run, page
from panel_api.access import RANK, Access, Role
from panel_api.app import build_routes, create_app
from panel_api.contract import OPERATIONS, PAGE_ROUTES, SERVICE_ROUTES, rules_of
from panel_api.passwords import Passwords
from panel_api.seed import seed
from panel_api.team import Team
from shared.clock import SYSTEM_CLOCK
from shared.openapi import STORABLE
from shared.settings import Secret
from shared.testing import serve_in_thread
from shared.tls import verified
from tests.billing.e2e import gateways
from tests.botedge.conftest import insert_bot
from tests.conftest import (
    HTTP,
    TEST_BCRYPT_ROUNDS,
    Serve,
    Served,
    WrittenDown,
    panel_settings,
    serve_billing,
    serve_botedge_api,
    serve_simtelegram,
)
from tests.scale import FULL, sized
from tests.shared.e2e.test_service_contracts import (
    configure,
    counted,
    credentials,
    every_check,
    stateful,
    write_down,
    write_down_scenarios,
)

PASSWORD = "correct horse battery"
# Per operation and generation mode (valid, then invalid requests): the owner, who may do
# everything, gets the most; the other roles show the same handlers under their own gates.
EXAMPLES = {Role.OWNER: sized(2, 50)}
ROLE_EXAMPLES = sized(1, 50)
# Where the role is below the operation's least role: every answer is the same 403, decided
# before the request is read, so a few show it.
REFUSED_EXAMPLES = sized(1, 2)
# Scenarios of up to six linked calls.
SCENARIOS = sized(30, 500)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
if FULL:
    CHECKS = every_check()


@dataclass
class Panel:
    url: str
    token: str
    role: Role


@pytest.fixture(params=[Role.VIEWER, Role.EDITOR, Role.ADMIN, Role.OWNER], ids=str)
def panel(
    request: pytest.FixtureRequest,
    serve: Serve,
    database_url: str,
) -> Iterator[Panel]:
    role: Role = request.param
    sim = serve_simtelegram(serve)
    botedge = serve_botedge_api(serve, database_url, TELEGRAM_API_BASE=sim.url)
    billing = serve_billing(serve, database_url)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings_ = panel_settings(database_url, BOTEDGE_URL=botedge.url, BILLING_URL=billing.url)
    with serve_in_thread(create_app(settings_)) as url:
        owner = sign_in(url, "owner@example.com")
        fill(url, owner, database_url, billing, sim)
        if role is Role.OWNER:
            yield Panel(url, owner, role)
            return
        added = HTTP.post(
            f"{url}/v1/team",
            json={"email": f"{role}@example.com", "role": role.value, "password": PASSWORD},
            headers={"Authorization": f"Bearer {owner}"},
        )
        assert added.status_code == 201, added.text
        yield Panel(url, sign_in(url, f"{role}@example.com"), role)


def sign_in(url: str, email: str) -> str:
    answer = HTTP.post(f"{url}/v1/auth/login", json={"email": email, "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])


def fill(url: str, owner: str, database_url: str, billing: Served, sim: Served) -> None:
    """A row in every list, so answers are checked with items in them, not only empty."""
    channel = gateways.add_paid_channel(database_url)
    old = dt.datetime.now(dt.UTC) - dt.timedelta(days=3)
    gateways.set_membership(database_url, 501, channel, old)
    auth = {"Authorization": f"Bearer {owner}"}
    with httpx.Client(headers=auth, verify=verified()) as client:
        made = client.post(
            f"{url}/v1/invoices",
            json={"telegram_user_id": 501, "channel_id": channel, "gateway": "subgate"},
        )
        assert made.status_code == 201, made.text
        order = made.json()["order_reference"]
        for payment in (
            gateways.subgate(order, "pay-1", "12.50"),
            gateways.subgate(order, "pay-2", "1.00"),
            gateways.subgate("gh_nobody", "pay-3", "12.50"),
        ):
            assert payment.send(client, billing.url).status_code == 200
        patched = client.patch(f"{url}/v1/workspace", json={"time_zone": "Asia/Tehran"})
        assert patched.status_code == 200, patched.text
    bot, _, _ = insert_bot(database_url)
    with psycopg.connect(database_url) as conn:
        person = conn.execute("SELECT id FROM people WHERE telegram_user_id = 501").fetchone()
        assert person is not None
        conn.execute(
            "INSERT INTO bot_people (bot_id, person_id, first_seen_at, last_seen_at)"
            " VALUES (%s, %s, now(), now())",
            (bot, person[0]),
        )
        conn.execute(
            "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload, state, attempt,"
            " last_error) VALUES (%s, 1, 501, 'message', '{}', 'dead', 5, 'boom')",
            (bot,),
        )
    # A channel found through botedge, a content behind it, the access event billing wrote.
    HTTP.post(
        f"{sim.url}/_sim/chats",
        json={
            "id": -1001000000777,
            "type": "channel",
            "username": "sponsor_one",
            "admin_bots": [5550001],
        },
    ).raise_for_status()
    with httpx.Client(headers=auth, timeout=30, verify=verified()) as client:
        found = client.post(f"{url}/v1/channels", json={"bot_id": bot, "chat": "@sponsor_one"})
        assert found.status_code == 200, found.text
        gate = client.put(
            f"{url}/v1/bots/{bot}/default-gate",
            json={"channels": [{"channel_id": found.json()["chat"]["id"]}]},
        )
        assert gate.status_code == 200, gate.text
        content = client.post(
            f"{url}/v1/contents",
            json={"bot_id": bot, "code": "promo", "kind": "text", "body": "Hello"},
        )
        assert content.status_code == 201, content.text
        assert content.json()["gate"][0]["title"] == found.json()["chat"]["title"]
        slot = client.post(
            f"{url}/v1/ad-slots",
            json={"bot_id": bot, "kind": "button", "title": "Button", "price": "3.25"},
        )
        assert slot.status_code == 201, slot.text
    # An order as botedge books it, for the order routes to answer with.
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "INSERT INTO ad_orders (slot_id, person_id, ad, price_micros, accepts_usdt,"
            ' accepts_trx) SELECT %s, id, \'{"text": "Ad"}\', 3250000, true, false'
            " FROM people LIMIT 1",
            (slot.json()["id"],),
        )


# Each documented operation's least role (None: open to anyone).
LEAST = {
    (method, path.replace(":int}", "}")): op.least
    for (method, path), op in {**OPERATIONS, **SERVICE_ROUTES}.items()
}


def exercise(
    operation: Any,
    mode: GenerationMode,
    auth: dict[str, str],
    statuses: set[int],
    session: requests.Session,
    examples: int,
) -> None:
    """Generated requests for one operation in one mode, each answer checked; the statuses of
    valid requests are collected."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: schemathesis.Case) -> None:
        response = case.call_and_validate(
            session=session, headers=credentials(case, auth), checks=CHECKS, timeout=30
        )
        if mode is GenerationMode.POSITIVE:
            statuses.add(response.status_code)

    run()


@pytest.mark.slow(14)
@pytest.mark.scaled
def test_every_route_as_each_role__conforms_to_the_openapi_document(
    panel: Panel, written_down: WrittenDown
) -> None:
    document = api_document(panel.url)
    schema = schemathesis.openapi.from_dict(document)
    configure(schema, panel.url)
    auth = {"Authorization": f"Bearer {panel.token}"}
    failures: list[str] = []
    statuses: dict[str, set[int]] = {}
    # One session, so requests reuse a connection; it keeps no cookie, so each request is
    # judged on its own headers.
    session = requests.Session()
    session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
    answered = counted(session)
    for result in schema.get_all_operations():
        operation = result.ok()
        item = document["paths"][operation.path][operation.method.lower()]
        # Invalid requests need something to make invalid: a parameter or a body.
        takes = item["parameters"] or "requestBody" in item
        seen = statuses.setdefault(operation.label, set())
        least = LEAST[(operation.method.upper(), operation.path)]
        refused = least is not None and RANK[panel.role] < RANK[least]
        examples = REFUSED_EXAMPLES if refused else EXAMPLES.get(panel.role, ROLE_EXAMPLES)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)[: 2 if takes else 1]:
            try:
                exercise(operation, mode, auth, seen, session, examples)
            except (Exception, BaseExceptionGroup) as failure:
                # Hypothesis wraps what failed (a flaky one too): name each inner failure.
                inner = "".join(f"\n  {e!r}" for e in getattr(failure, "exceptions", ()))
                failures.append(f"{operation.label} ({mode.value}): {failure}{inner}")
    assert failures == [], "\n\n".join(failures)
    # Every route was generated for.
    every = {f"{m} {p.replace(':int}', '}')}" for m, p in {*OPERATIONS, *SERVICE_ROUTES}}
    assert statuses.keys() == every
    # The role table held for every request made: below an operation's least role nothing but
    # 403, at or above it never 403.
    for (method, path), op in OPERATIONS.items():
        if op.least is None:
            continue
        seen = statuses[f"{method} {path.replace(':int}', '}')}"]
        if RANK[panel.role] < RANK[op.least]:
            assert seen == {403}, (method, path, seen)
        else:
            assert 403 not in seen, (method, path, seen)
    examples = EXAMPLES.get(panel.role, ROLE_EXAMPLES)
    title = f"Schemathesis against panel-api as {panel.role}"
    write_down(written_down, title, len(every), examples, len(CHECKS), answered)


@pytest.mark.slow(10)
@pytest.mark.scaled
@pytest.mark.parametrize("panel", [Role.OWNER], indirect=True, ids=str)
def test_linked_calls__conform_to_the_openapi_document(
    panel: Panel, written_down: WrittenDown
) -> None:
    """Chains of calls, each taking an id from an earlier answer: a content made then changed
    and deleted, a broadcast made then cancelled, an order listed then approved."""
    schema = schemathesis.openapi.from_dict(api_document(panel.url))
    configure(schema, panel.url)
    run = stateful(schema, {"Authorization": f"Bearer {panel.token}"}, SCENARIOS)
    assert run.failures == [], "\n\n".join(run.failures)
    # The links Schemathesis infers from the document carried values from answer to call.
    assert run.chained > 0, run
    write_down_scenarios(written_down, "Schemathesis's linked calls against panel-api", run)


def api_document(url: str) -> dict[str, Any]:
    """The document without the page's routes, which answer HTML for any path outside the
    API: the API's own checks are run on the rest."""
    document: dict[str, Any] = HTTP.get(f"{url}/openapi.json").json()
    for _, path in PAGE_ROUTES:
        document["paths"].pop(path.replace(":path}", "}"))
    return document


def test_openapi__documents_every_route_the_app_serves(database_url: str) -> None:
    app = create_app(panel_settings(database_url))
    # The page's fallback (every other path) is not the API's.
    served = {
        (method, route.path)
        for route in app.routes
        if getattr(route, "endpoint", None) is not page.index
        for method in getattr(route, "methods", None) or ()
        if method != "HEAD"
    }
    with serve_in_thread(app) as url:
        document = HTTP.get(f"{url}/openapi.json").json()
    documented = {
        (method.upper(), path) for path, item in document["paths"].items() for method in item
    }
    assert document["openapi"] == "3.1.0"
    assert served == {*OPERATIONS, *SERVICE_ROUTES}
    # The page's fallback is documented too: `/` and every other path outside the API.
    page_paths = {
        (method, path)
        for route in app.routes
        if getattr(route, "endpoint", None) is page.index
        for method in ("GET",)
        for path in [route.path.replace(":path}", "}")]  # type: ignore[attr-defined]
    }
    assert page_paths == {("GET", "/"), ("GET", "/{path}")}
    assert (
        documented == {(method, path.replace(":int}", "}")) for method, path in served} | page_paths
    )
    assert document["paths"]["/{path}"]["get"]["responses"]["200"]["content"] == {
        "text/html": {"schema": {"type": "string"}}
    }
    bearer = document["components"]["securitySchemes"]["bearer"]
    assert (bearer["type"], bearer["scheme"]) == ("http", "bearer")
    for (method, path), op in OPERATIONS.items():
        item = document["paths"][path.replace(":int}", "}")][method.lower()]
        if op.least is not None:
            assert item["security"] == [{"bearer": []}]
            assert item["x-least-role"] == op.least.value
            assert {"401", "403"} <= item["responses"].keys()
        for status, response in item["responses"].items():
            if int(status) >= 400:
                assert "application/problem+json" in response["content"]
        # The rules beyond the schema are written down, with the 422 that answers them.
        assert item.get("x-rules", []) == list(rules_of(op))
        assert not rules_of(op) or "422" in item["responses"]
    # Every plain text says it holds no NUL, which PostgreSQL's text cannot.
    password = document["components"]["schemas"]["LoginBody"]["properties"]["password"]
    assert password["pattern"] == STORABLE


def test_routes__every_operation_is_served_by_its_handler_and_a_missing_feature_stops_the_app(
    database_url: str,
) -> None:
    assert all(op.handler is not None for op in OPERATIONS.values())
    settings = panel_settings(database_url)
    clock = SYSTEM_CLOCK
    passwords = Passwords(settings.bcrypt_rounds)
    features = [
        auth.SignIn(
            settings.jwt_secret,
            auth.Installation(),
            clock,
            settings.trusted_proxies,
            passwords,
        ),
        first_run.Setup(clock, settings.trusted_proxies, passwords),
        Team(clock, passwords),
    ]
    access = Access(Secret("x" * 32), auth.Installation(), clock)
    with pytest.raises(RuntimeError, match=r"no feature serves its contract.OPERATIONS entry"):
        build_routes(access, features)
