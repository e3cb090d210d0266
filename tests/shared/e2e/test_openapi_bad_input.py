"""Bad input on every route each service's OpenAPI document lists, generated from the document
so that a new route is covered without a new test: a JSON body with a byte that is not UTF-8,
and query parameters given twice, of the wrong type, `null`, or a number for a time. Each is
answered 4xx problem+json at its field, never a 500, and nothing is logged as an error."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot
from tests.conftest import (
    HTTP,
    SECRETS,
    TEST_BCRYPT_ROUNDS,
    Serve,
    panel_settings,
    serve_botedge_api,
    serve_simtelegram,
)
from tests.panel_api.e2e.conftest import PASSWORD, sign_in, start_billing

BAD_BYTE = b"\xff"
WRITES = ("post", "put", "patch", "delete")


@dataclass(frozen=True)
class Service:
    name: str
    url: str
    # The credentials each security scheme of its document asks for.
    headers: dict[str, dict[str, str]]

    def document(self) -> dict[str, Any]:
        answer = HTTP.get(f"{self.url}/openapi.json")
        assert answer.status_code == 200
        return dict(answer.json())

    def credentials(self, operation: dict[str, Any]) -> dict[str, str]:
        for requirement in operation.get("security", []):
            for scheme in requirement:
                if scheme in self.headers:
                    return self.headers[scheme]
        return {}


@pytest.fixture
def services(database_url: str, serve: Serve) -> Iterator[dict[str, Service]]:
    """billing, botedge's api (with the simulated Telegram) and panel-api on one database."""
    sim = serve_simtelegram(serve)
    botedge = serve_botedge_api(serve, database_url, TELEGRAM_API_BASE=sim.url)
    billing = start_billing(serve, database_url, BOTEDGE_URL=botedge.url)
    insert_bot(database_url)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, BOTEDGE_URL=botedge.url, BILLING_URL=billing)
    service = {"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"}
    with serve_in_thread(create_app(settings)) as panel:
        owner = {"Authorization": f"Bearer {sign_in(panel, 'owner@example.com', PASSWORD)}"}
        yield {
            "billing": Service(
                "billing",
                billing,
                {
                    "bearer": service,
                    "sweep": {"Authorization": f"Bearer {SECRETS['SWEEP_TOKEN']}"},
                },
            ),
            "botedge": Service("botedge", botedge.url, {"bearer": service}),
            "panel-api": Service("panel-api", panel, {"bearer": owner}),
        }


def concrete(path: str) -> str:
    """A path with each of its parameters filled: an id of 1, a gateway's or a word's name."""
    return re.sub(r"\{(\w+)\}", lambda m: "subgate" if m.group(1) == "gateway" else "1", path)


def body_schema(document: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any] | None:
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema")
    if schema is None:
        return None
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return dict(schema)


def may_hold_text(schema: dict[str, Any]) -> bool:
    options = schema.get("anyOf", [schema])
    return any(option.get("type") == "string" for option in options)


def not_utf8_body(document: dict[str, Any], operation: dict[str, Any]) -> tuple[bytes, str]:
    """A body whose one text field holds a byte that is not UTF-8, and that field's name; with
    no text field, the byte is in a name of its own."""
    schema = body_schema(document, operation) or {}
    texts = [name for name, prop in schema.get("properties", {}).items() if may_hold_text(prop)]
    field = texts[0] if texts else ""
    if field:
        return b'{"' + field.encode() + b'": "a' + BAD_BYTE + b'b"}', field
    return b'{"a' + BAD_BYTE + b'": 1}', field


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            yield method, path, operation


def refused_at(answer: httpx.Response, field: str, codes: set[str]) -> str | None:
    """What is wrong with a refusal that should be a 4xx problem at `field`, or None."""
    if not 400 <= answer.status_code < 500:
        return f"answered {answer.status_code}: {answer.text[:200]}"
    if answer.headers.get("content-type") != "application/problem+json":
        return f"answered {answer.headers.get('content-type')}"
    if answer.status_code != 422:
        return None if answer.status_code in (400, 401, 404, 413) else f"{answer.status_code}"
    errors = answer.json().get("errors", [])
    if field and not any(e["field"] == field and e["code"] in codes for e in errors):
        return f"422 not at {field} ({codes}): {answer.text[:200]}"
    return None


def all_refused(wrong: list[str], tried: int, least: int, caplog: pytest.LogCaptureFixture) -> None:
    """Every request refused as it should be, at least `least` of them made (the document
    still lists what the generator reads), and no error logged."""
    assert wrong == [], "\n".join(wrong)
    assert tried >= least
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


@pytest.mark.parametrize("name", ["billing", "botedge", "panel-api"])
def test_every_write_route__a_body_that_is_not_utf8_is_refused_at_its_field(
    services: dict[str, Service], name: str, caplog: pytest.LogCaptureFixture
) -> None:
    service = services[name]
    document = service.document()
    tried, wrong = 0, []
    with caplog.at_level(logging.ERROR):
        for method, path, operation in operations(document):
            # A route that takes no body reads none; one signed by its caller (a gateway's
            # webhook, Telegram's) is refused before its body is read.
            signed = any(p["in"] == "header" for p in operation.get("parameters", []))
            if method not in WRITES or "requestBody" not in operation:
                continue
            body, field = not_utf8_body(document, operation)
            answer = HTTP.request(
                method.upper(),
                f"{service.url}{concrete(path)}",
                content=body,
                headers={"Content-Type": "application/json", **service.credentials(operation)},
            )
            tried += 1
            # A route with a typed body and credentials we hold reads it: refused at the field.
            typed = body_schema(document, operation) is not None and not signed
            typed = typed and (
                not operation.get("security") or bool(service.credentials(operation))
            )
            problem = refused_at(answer, field, {"bad-format"})
            if problem is None and typed and answer.status_code not in (400, 422):
                problem = f"answered {answer.status_code} before reading the body"
            if problem is not None:
                wrong.append(f"{method.upper()} {path}: {problem}")
    all_refused(wrong, tried, {"billing": 6, "botedge": 5, "panel-api": 25}[name], caplog)


def query_cases(parameter: dict[str, Any]) -> list[tuple[str, set[str]]]:
    """Query strings that break what a parameter's schema says, with the codes a refusal at
    it may carry: given twice, and by its type, a word for a number, `null`, a number for a
    time."""
    name, schema = parameter["name"], parameter["schema"]
    kinds = {option.get("type") for option in schema.get("anyOf", [schema])}
    formats = {option.get("format") for option in schema.get("anyOf", [schema])}
    cases = [(f"{name}=1&{name}=1", {"duplicate"})]
    if "integer" in kinds:
        cases.append((f"{name}=x", {"not-a-number", "wrong-type"}))
        cases.append((f"{name}=null", {"bad-format", "not-a-number"}))
        cases.append((f"{name}=0.5", {"not-a-number", "wrong-type", "out-of-range"}))
    if formats & {"date-time", "date"}:
        cases += [(f"{name}=0.5", {"bad-format"}), (f"{name}=null", {"bad-format"})]
    return cases


@pytest.mark.parametrize("name", ["billing", "botedge", "panel-api"])
def test_every_query_parameter__a_value_off_its_type_or_given_twice_is_422_at_it(
    services: dict[str, Service], name: str, caplog: pytest.LogCaptureFixture
) -> None:
    service = services[name]
    document = service.document()
    tried, wrong = 0, []
    with caplog.at_level(logging.ERROR):
        for method, path, operation in operations(document):
            headers = service.credentials(operation)
            if operation.get("security") and not headers:
                continue
            for parameter in operation.get("parameters", []):
                if parameter["in"] != "query":
                    continue
                for query, codes in query_cases(parameter):
                    answer = HTTP.request(
                        method.upper(), f"{service.url}{concrete(path)}?{query}", headers=headers
                    )
                    tried += 1
                    problem = refused_at(answer, parameter["name"], codes)
                    if problem is None and answer.status_code != 422:
                        problem = f"answered {answer.status_code}"
                    if problem is not None:
                        wrong.append(f"{method.upper()} {path}?{query}: {problem}")
    all_refused(wrong, tried, {"billing": 4, "botedge": 4, "panel-api": 100}[name], caplog)
