"""billing and botedge against their own OpenAPI documents: every route is documented, and
Schemathesis generates valid and invalid requests for each over real HTTP (billing with the
simulated TronGrid behind it, botedge's api with the simulated Telegram), each answer checked:
no 5xx, a documented status, the documented content type and schema."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.parameters import ParameterLocation
from schemathesis.engine import events, from_schema
from schemathesis.generation.meta import negated_parameters
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from billing.app import OPERATIONS as BILLING
from botedge.app import OPERATIONS as BOTEDGE
from shared.openapi import SERVICE_ROUTES
from tests.billing.e2e import gateways
from tests.botedge.conftest import insert_bot
from tests.conftest import (
    HTTP,
    SECRETS,
    Serve,
    WrittenDown,
    serve_botedge_api,
    serve_simtelegram,
)
from tests.panel_api.e2e.conftest import start_billing
from tests.scale import FULL, sized

EXAMPLES = sized(3, 100)
POSITIVE = positive_data_acceptance.__name__


@schemathesis.check
def accepted(ctx: Any, response: Any, case: schemathesis.Case) -> bool | None:
    """A valid request is taken, or refused with a 422 only by an operation that documents the
    rules (`x-rules`) it checks beyond its schema."""
    if response.status_code == 422 and case.operation.definition.raw.get("x-rules"):
        return None
    return positive_data_acceptance(ctx, response, case)


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    # An invalid request (by the document) is refused with a 4xx, never taken; a valid one
    # taken, or refused only by a rule the operation names.
    negative_data_rejection,
    accepted,
]


def every_check() -> list[Any]:
    """`make faults`: every check Schemathesis has, positive data acceptance as `accepted`
    (registered above, so it is one of them)."""
    return [c for c in schemathesis.checks.CHECKS.get_all() if c is not positive_data_acceptance]


if FULL:
    CHECKS = every_check()


def configure(schema: Any, url: str) -> None:
    schema.config.update(base_url=url)
    # Schemathesis's own alphabet puts NUL in strings whatever their pattern; every string of
    # ours states it holds none, and decode_json refuses one at its field (test_problems).
    schema.config.generation.update(allow_x00=False)
    checks = schema.config.checks
    # A body past the service's size limit is refused before it is read: 413.
    checks.negative_data_rejection.expected_statuses = [
        *checks.negative_data_rejection.expected_statuses,
        "413",
    ]
    # 503 with Retry-After is the documented answer while the database or a dependency is
    # away (Telegram asking to wait, a valid request's send being its flood limit); a 500 is
    # never one.
    checks.not_a_server_error.expected_statuses = [
        *checks.not_a_server_error.expected_statuses,
        "503",
    ]


def counted(session: requests.Session) -> Counter[int]:
    """The statuses of every answer the session gets, counted."""
    answered: Counter[int] = Counter()

    def count(response: requests.Response, *args: Any, **kwargs: Any) -> None:
        answered[response.status_code] += 1

    session.hooks["response"].append(count)
    return answered


def write_down(
    written_down: WrittenDown,
    title: str,
    operations: int,
    examples: int,
    checks: int,
    answered: Counter[int],
) -> None:
    """A passed run's figures, for docs/reliability.md when `make faults` runs it."""
    written_down(
        title,
        f"requests Schemathesis made from /openapi.json, valid and invalid, {checks} checks"
        " on each answer",
        f"{examples} examples a mode and operation, {operations} operations",
        {
            "requests": sum(answered.values()),
            "answers by status": ", ".join(f"{s}: {n}" for s, n in sorted(answered.items())),
            "500s": answered[500],
            "check failures": 0,
        },
    )


@dataclass
class Scenarios:
    """What a stateful run did: its scenarios, the answers, the steps that took a value from an
    earlier answer, and every check that failed (with the requests that reproduce it)."""

    scenarios: int = 0
    chained: int = 0
    answered: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


def stateful(schema: Any, headers: dict[str, str], scenarios: int) -> Scenarios:
    """Schemathesis's stateful phase: chains of calls where a later call's parameters come from
    an earlier answer (made, then read, changed, cancelled or deleted), with the links it infers
    from the document's schemas and paths, every check on each answer."""
    schema.config.update(headers=headers, workers=1)
    schema.config.phases.update(phases=["stateful"])
    checks = schema.config.checks
    checks.update(included_check_names=["all"], excluded_check_names=[POSITIVE])
    run = Scenarios()
    # Hypothesis ends a suite early, quietly, when a replayed choice meets a server whose state
    # has moved on (FlakyStrategyDefinition); fresh suites until the scenarios are made. A few
    # dozen random scenarios can all end before a link is followed (each first call refused):
    # more, up to four times as many, until one has.
    limit = 4 * scenarios
    for _ in range(limit):
        if run.scenarios >= limit or (run.scenarios >= scenarios and run.chained > 0):
            break
        wanted = scenarios - run.scenarios if run.scenarios < scenarios else scenarios
        schema.config.generation.update(max_examples=wanted, database="none")
        suite(schema, run)
    return run


def suite(schema: Any, run: Scenarios) -> None:
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            run.scenarios += 1
            recorder = event.recorder
            run.answered.update(
                i.response.status_code for i in recorder.interactions.values() if i.response
            )
            run.chained += sum(1 for c in recorder.cases.values() if c.is_transition_applied)
            for done in recorder.checks.values():
                run.failures += [
                    f"{check.name}: {check.failure_info.failure}\n{check.failure_info.code_sample}"
                    for check in done
                    if check.failure_info is not None
                ]
        elif isinstance(event, events.NonFatalError):
            run.failures.append(f"{event.label}: {event.value!r}\n{event.info.code_sample}")
        elif isinstance(event, events.FatalError):
            run.failures.append(repr(event.exception))


def write_down_scenarios(written_down: WrittenDown, title: str, run: Scenarios) -> None:
    """A passed stateful run's figures, for docs/reliability.md."""
    written_down(
        title,
        "chains of calls Schemathesis made from /openapi.json, each taking values from an"
        " earlier answer, every check on each answer",
        f"{run.scenarios} scenarios of up to 6 calls",
        {
            "requests": sum(run.answered.values()),
            "calls chained to an earlier answer": run.chained,
            "answers by status": ", ".join(f"{s}: {n}" for s, n in sorted(run.answered.items())),
            "500s": run.answered[500],
            "check failures": len(run.failures),
        },
    )


def credentials(case: schemathesis.Case, auth: dict[str, str]) -> dict[str, str]:
    """The real token, unless this invalid request is one without it: putting it back would
    make the request valid, and its acceptance look like a failure to refuse."""
    removed = ("Authorization", ParameterLocation.HEADER) in set(negated_parameters(case._meta))
    return {} if removed else auth


def billing(serve: Serve, database_url: str) -> tuple[str, dict[tuple[str, str], Any]]:
    gateways.add_paid_channel(database_url)
    return start_billing(serve, database_url), BILLING


def botedge(serve: Serve, database_url: str) -> tuple[str, dict[tuple[str, str], Any]]:
    insert_bot(database_url)
    sim = serve_simtelegram(serve)
    return serve_botedge_api(serve, database_url, TELEGRAM_API_BASE=sim.url).url, BOTEDGE


SERVICES: dict[str, Callable[[Serve, str], tuple[str, dict[tuple[str, str], Any]]]] = {
    "billing": billing,
    "botedge": botedge,
}


def documented(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {(m.upper(), path) for path, item in document["paths"].items() for m in item}


@pytest.mark.parametrize("service", SERVICES)
def test_openapi__documents_every_route_the_service_serves(
    service: str, serve: Serve, database_url: str
) -> None:
    url, operations = SERVICES[service](serve, database_url)
    document = HTTP.get(f"{url}/openapi.json").json()
    expected = {(m, p.replace(":int}", "}")) for m, p in {*operations, *SERVICE_ROUTES}}
    assert document["openapi"] == "3.1.0"
    assert documented(document) == expected
    for path, item in document["paths"].items():
        for method, op in item.items():
            for status, response in op["responses"].items():
                if int(status) >= 400:
                    assert "application/problem+json" in response["content"], (method, path)


@pytest.mark.slow(20)
@pytest.mark.scaled
@pytest.mark.parametrize("service", SERVICES)
def test_every_route__conforms_to_the_openapi_document(
    service: str, serve: Serve, database_url: str, written_down: WrittenDown
) -> None:
    url, _ = SERVICES[service](serve, database_url)
    document = HTTP.get(f"{url}/openapi.json").json()
    schema = schemathesis.openapi.from_dict(document)
    configure(schema, url)
    session = requests.Session()
    answered = counted(session)
    failures: list[str] = []
    statuses: dict[str, set[int]] = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        token = SECRETS["SWEEP_TOKEN" if operation.path == "/v1/sweep" else "SERVICE_TOKEN"]
        auth = {"Authorization": f"Bearer {token}"}
        item = document["paths"][operation.path][operation.method.lower()]
        takes = item["parameters"] or "requestBody" in item
        seen = statuses.setdefault(operation.label, set())
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)[: 2 if takes else 1]:
            try:
                exercise(operation, mode, auth, seen, session)
            except (Exception, BaseExceptionGroup) as failure:
                inner = "".join(f"\n  {e!r}" for e in getattr(failure, "exceptions", ()))
                failures.append(f"{operation.label} ({mode.value}): {failure}{inner}")
    assert failures == [], "\n\n".join(failures)
    assert {tuple(label.split(" ", 1)) for label in statuses} == documented(document)
    title = f"Schemathesis against {service}"
    write_down(written_down, title, len(statuses), EXAMPLES, len(CHECKS), answered)


def exercise(
    operation: Any,
    mode: GenerationMode,
    auth: dict[str, str],
    statuses: set[int],
    session: requests.Session,
) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: schemathesis.Case) -> None:
        response = case.call_and_validate(
            session=session, headers=credentials(case, auth), checks=CHECKS, timeout=30
        )
        statuses.add(response.status_code)

    run()
