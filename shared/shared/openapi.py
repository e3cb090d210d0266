"""The OpenAPI 3.1 document of a service's routes (billing, botedge), from one table of
operations: the request bodies and queries are the msgspec types the handlers decode, so the
document states the limits and patterns they enforce. Problem answers follow from what an
operation takes (a token: 401; a body: 400, 413, 422; an id in the path: 404; the database:
503) plus the ones it names.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from shared.errors import PROBLEM_JSON, FieldError
from shared.settings import Secret
from shared.web import require_bearer

# An answer whose fields the document does not pin down: a JSON object.
Object = dict[str, Any]


class ProblemBody(msgspec.Struct):
    """RFC 9457 problem details; the slug in `type` is listed in docs/errors.md."""

    type: str
    title: str
    status: int
    detail: str
    errors: list[FieldError] | msgspec.UnsetType = msgspec.UNSET
    """On a 422: each refused field and what is wrong with it, by a code of docs/errors.md."""


class Health(msgspec.Struct):
    status: Literal["ok"]


class Ready(msgspec.Struct):
    status: Literal["ready"]
    migration: int
    breakers: dict[str, dict[str, str | None]] | msgspec.UnsetType = msgspec.UNSET


@dataclass(frozen=True)
class Operation:
    summary: str
    answer: Any = Object
    """The type of a successful answer's body; None: no body."""
    status: int = 200
    body: Any = None
    """The type the handler decodes its JSON body as."""
    query: type[msgspec.Struct] | None = None
    problems: tuple[int, ...] = ()
    """Problem answers beyond those that follow from the rest."""
    security: str | None = "bearer"
    """The scheme that guards it (`bearer`: a service's token); None: open."""
    media_type: str = "application/json"
    headers: tuple[tuple[str, dict[str, Any]], ...] = ()
    """Request headers it reads, with their schemas."""
    rules: tuple[str, ...] = ()
    """What it refuses with a 422 that a schema cannot say: across fields, against the clock
    or against what is stored (`x-rules` in the document)."""
    handler: Any = None
    """The feature's method that answers it (`Feature.method`, unbound); not documented."""


SERVICE_ROUTES: dict[tuple[str, str], Operation] = {
    ("GET", "/healthz"): Operation("The process answers", Health, security=None),
    ("GET", "/readyz"): Operation(
        "The database answers and is migrated; the breakers open", Ready, security=None
    ),
    ("GET", "/metrics"): Operation(
        "Prometheus metrics", str, security=None, media_type="text/plain; version=0.0.4"
    ),
    ("GET", "/openapi.json"): Operation("This document", Object, security=None),
}

PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")
REASONS = {
    400: "The body is not JSON, or its length is malformed",
    401: "No valid credentials or signature",
    403: "Not allowed",
    404: "Nothing by that name or id",
    409: "It conflicts with what exists",
    413: "The body is too large",
    422: "A value is missing, of the wrong type or out of range",
    429: "Too many; wait `Retry-After` seconds",
    502: "Telegram refused",
    503: "The database or a dependency is unavailable; retry shortly",
}


def problems_of(route: str, op: Operation) -> list[int]:
    statuses = {503, *op.problems}
    if op.security is not None:
        statuses.add(401)
    if op.body is not None:
        statuses |= {400, 413, 422}
    if op.query is not None or op.rules:
        statuses.add(422)
    if PARAM.search(route):
        statuses.add(404)
    return sorted(statuses)


# What PostgreSQL's text can hold: no NUL, no lone UTF-16 surrogate (every service refuses
# either with a 422 at its field). Stated on each string without a pattern of its own.
STORABLE = r"^[^\x00\ud800-\udfff]*$"


def storable_strings(schema: Any) -> Any:
    """`schema` with STORABLE on every string that has no pattern, format or fixed values."""
    if isinstance(schema, list):
        return [storable_strings(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    done = {key: storable_strings(value) for key, value in schema.items()}
    if done.get("type") == "string" and not {"pattern", "format", "enum", "const"} & done.keys():
        done["pattern"] = STORABLE
    return done


def document(
    title: str,
    version: str,
    operations: dict[tuple[str, str], Operation],
    security: dict[str, Any],
) -> dict[str, Any]:
    """The document of `operations` and the routes every service has."""
    everything = {**operations, **SERVICE_ROUTES}
    types: list[Any] = [ProblemBody]
    for op in everything.values():
        types += [t for t in (op.answer, op.body) if t is not None and t is not str]
    refs, components = msgspec.json.schema_components(
        types, ref_template="#/components/schemas/{name}"
    )
    schema_of = dict(zip(map(repr, types), refs, strict=True))
    paths: dict[str, dict[str, Any]] = {}
    for (method, route), op in everything.items():
        path = PARAM.sub(r"{\1}", route)
        paths.setdefault(path, {})[method.lower()] = _operation(method, route, op, schema_of)
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {"schemas": storable_strings(components), "securitySchemes": security},
    }


def route(body: bytes) -> Route:
    """`GET /openapi.json`, answering the document encoded once."""

    async def answer(request: Request) -> Response:
        return Response(body, media_type="application/json")

    return Route("/openapi.json", answer, methods=["GET"])


Endpoint = Callable[[Request], Awaitable[Response]]


def routes(
    operations: dict[tuple[str, str], Operation],
    features: Iterable[object],
    secrets: dict[str, Secret],
) -> list[Route]:
    """A route for each operation, answered by its handler's method on the feature of that
    class and guarded by the bearer secret its `security` names. An operation no feature
    serves, or a scheme without a secret, stops the service at its start."""
    built = []
    for (method, path), endpoint in handlers(operations, features, "it").items():
        op = operations[method, path]
        if op.security is not None:
            if op.security not in secrets:
                raise RuntimeError(f"{method} {path}: no secret for {op.security!r}")
            endpoint = _guarded(endpoint, secrets[op.security])
        built.append(Route(path, endpoint, methods=[method]))
    return built


def handlers(
    operations: Mapping[tuple[str, str], Any], features: Iterable[object], entry: str
) -> dict[tuple[str, str], Any]:
    """Each operation's `handler` bound to the feature of its class (`Feature.method` ->
    that feature's method); an operation no feature serves stops the service at its start
    (`entry` names the table entry in the message)."""
    by_class = {type(feature).__name__: feature for feature in features}
    bound = {}
    for (method, path), op in operations.items():
        owner = op.handler.__qualname__.split(".")[0] if op.handler is not None else None
        if owner not in by_class:
            raise RuntimeError(f"{method} {path}: no feature serves {entry}")
        bound[method, path] = op.handler.__get__(by_class[owner])
    return bound


def _guarded(endpoint: Endpoint, secret: Secret) -> Endpoint:
    async def guarded(request: Request) -> Response:
        require_bearer(request, secret)
        return await endpoint(request)

    return guarded


def _operation(method: str, route: str, op: Operation, schema_of: dict[str, Any]) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": _path_schema(route, name)}
        for name in PARAM.findall(route)
    ]
    if op.query is not None:
        parameters += query_parameters(op.query)
    parameters += [
        {"name": name, "in": "header", "required": True, "schema": schema}
        for name, schema in op.headers
    ]
    doc: dict[str, Any] = {
        "summary": op.summary,
        "operationId": "_".join([method.lower(), *re.findall(r"[a-z0-9]+", route.lower())]),
        "parameters": parameters,
        "responses": _responses(route, op, schema_of),
        "security": [] if op.security is None else [{op.security: []}],
    }
    if op.body is not None:
        doc["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": schema_of[repr(op.body)]}},
        }
    return with_rules(doc, op.rules)


def with_rules(doc: dict[str, Any], rules: tuple[str, ...]) -> dict[str, Any]:
    """An operation's document with the rules its 422 answers follow beyond the schema."""
    if rules:
        doc["x-rules"] = list(rules)
        doc["responses"]["422"]["description"] += "; or against a rule: " + "; ".join(rules)
    return doc


def _path_schema(route: str, name: str) -> dict[str, Any]:
    if re.search(r"\{" + name + r":int\}", route):
        return {"type": "integer", "minimum": 0}
    return {"type": "string", "pattern": "^[a-z_]{1,32}$"}


def _responses(route: str, op: Operation, schema_of: dict[str, Any]) -> dict[str, Any]:
    success = (op.status, op.summary, op.answer, op.media_type)
    return responses(success, problems_of(route, op), REASONS, schema_of)


def responses(
    success: tuple[int, str, Any, str],
    problems: Iterable[int],
    reasons: dict[int, str],
    schema_of: dict[str, Any],
) -> dict[str, Any]:
    """An operation's answers: its success (status, summary, body type, media type), then a
    problem+json answer for each status in `problems`, worded by `reasons`."""
    status, summary, kind, media_type = success
    done: dict[str, Any] = {"description": summary}
    if kind is str:
        done["content"] = {media_type: {"schema": {"type": "string"}}}
    elif kind is not None:
        done["content"] = {media_type: {"schema": schema_of[repr(kind)]}}
    answers: dict[str, Any] = {str(status): done}
    problem = {PROBLEM_JSON: {"schema": schema_of[repr(ProblemBody)]}}
    for code in problems:
        answer: dict[str, Any] = {"description": reasons[code], "content": problem}
        if code in (429, 503):
            answer["headers"] = {"Retry-After": {"schema": {"type": "integer"}}}
        answers[str(code)] = answer
    return answers


def query_parameters(kind: type[msgspec.Struct]) -> list[dict[str, Any]]:
    """A query type's fields as parameters: each optional one left out, never null."""
    (ref,), components = msgspec.json.schema_components([kind])
    schema = components[ref["$ref"].rsplit("/", 1)[-1]]
    required = set(schema.get("required", ()))
    return [
        {"name": name, "in": "query", "required": name in required, "schema": _not_null(prop)}
        for name, prop in schema["properties"].items()
    ]


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    options = [s for s in schema.get("anyOf", ()) if s != {"type": "null"}]
    rest = {k: v for k, v in schema.items() if k != "anyOf" and not (k == "default" and v is None)}
    if len(options) == 1:
        return {**rest, **options[0]}
    return {**rest, "anyOf": options} if options else rest
