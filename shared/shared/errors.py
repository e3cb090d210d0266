"""problem+json (RFC 9457) for every 4xx and 5xx, body size limits, and typed body decoding.

A handler raises `Problem(status, slug, detail)`; the app's exception handlers turn it, any
Starlette HTTPException and any unexpected exception into `application/problem+json`, never a
traceback. Slugs are listed in docs/errors.md.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from http import HTTPStatus
from typing import Any, Literal, TypeVar, get_args
from urllib.parse import parse_qsl

import msgspec
import msgspec.inspect
import psycopg
import psycopg_pool
from starlette.datastructures import QueryParams
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared import jsonsafe

log = logging.getLogger("shared.errors")

T = TypeVar("T")
S = TypeVar("S", bound=msgspec.Struct)

PROBLEM_JSON = "application/problem+json"
DEFAULT_BODY_LIMIT = 1024 * 1024

_DEFAULT_SLUGS = {
    400: "malformed-request",
    401: "unauthorized",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    409: "conflict",
    413: "body-too-large",
    415: "unsupported-media-type",
    422: "invalid-values",
    429: "too-many-requests",
    500: "internal-error",
    503: "unavailable",
}


class Problem(Exception):
    """An error a client is told about, as problem+json."""

    def __init__(
        self,
        status: int,
        slug: str | None = None,
        detail: str = "",
        *,
        title: str | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail or slug or str(status))
        self.status = status
        self.slug = slug or _DEFAULT_SLUGS.get(status, "error")
        self.title = title or HTTPStatus(status).phrase
        self.detail = detail
        self.headers = headers or {}
        self.extra = extra or {}


# What can be wrong with one field of a request, as the 422 answer's `errors` say it. A page
# words each code in its own language; docs/errors.md lists them.
FieldCode = Literal[
    "required",
    "unknown",
    "wrong-type",
    "not-a-number",
    "too-short",
    "too-long",
    "out-of-range",
    "bad-format",
    "too-precise",
    "not-one-of",
    "duplicate",
    "taken",
    "not-found",
    "reserved",
    "wrong",
    "no-rights",
    "unreachable",
    "mixed-currency",
    "placeholder-missing",
    "placeholder-unknown",
    "braces",
    "html",
    "html-plain",
    "invalid",
]
FIELD_CODES: tuple[FieldCode, ...] = get_args(FieldCode)


class FieldError(msgspec.Struct, frozen=True):
    """One refused field: its path in the body (`plan.price`, `ids[3]`) and what is wrong."""

    field: str
    code: FieldCode


_PATH = re.compile(r" - at `\$((?:\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\])*)`$")
_NAMED = re.compile(r"^Object (missing required|contains unknown) field `([^`]+)`")


def field_error(message: str) -> FieldError:
    """A msgspec validation message as a field and a code. msgspec says which field in words
    only (`Expected `int` >= 1 - at `$.days``), so this reads those words."""
    path = ""
    located = _PATH.search(message)
    if located:
        path = located.group(1).lstrip(".")
        message = message[: located.start()]
    named = _NAMED.match(message)
    if named:
        path = f"{path}.{named.group(2)}" if path else named.group(2)
        return FieldError(path, "required" if named.group(1) == "missing required" else "unknown")
    return FieldError(path, _code_of(message))


def _code_of(message: str) -> FieldCode:
    if message.startswith("Invalid enum value"):
        return "not-one-of"
    if "matching regex" in message or message.startswith("Invalid"):
        return "bad-format"
    if "of length <=" in message:
        return "too-long"
    if "of length >=" in message:
        return "too-short"
    if "out of range" in message or re.search(r"` (>=|>|<=|<) ", message):
        return "out-of-range"
    if message.startswith("Expected "):
        if message.endswith("got `null`"):
            return "required"
        if re.match(r"Expected `(int|float|decimal)\b", message):
            return "not-a-number"
        return "wrong-type"
    return "invalid"


class ServiceError(Exception):
    """What each service's own error base derives from: a slug (docs/errors.md) and a detail
    for a person. No HTTP here: each app maps its kinds to statuses in one table. `field` and
    `code` name the refused field, when one is to blame (a 422's `errors`)."""

    slug = "error"

    def __init__(
        self,
        detail: str,
        *,
        retry_after: int | None = None,
        field: str | None = None,
        code: FieldCode = "invalid",
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        # Seconds a client should wait before trying again (`Retry-After`), when it is known.
        self.retry_after = retry_after
        self.errors = () if field is None else (FieldError(field, code),)


E = TypeVar("E", bound=ServiceError)


def problem_for(error: Exception, statuses: Mapping[type[E], int]) -> Problem | None:
    """The answer to `error` by the service's table, or None when it is not one to give."""
    if not isinstance(error, ServiceError):
        return None
    status = next((code for kind, code in statuses.items() if isinstance(error, kind)), None)
    if status is None:
        return None
    wait = error.retry_after if error.retry_after is not None else 5 if status == 503 else None
    headers = None if wait is None else {"Retry-After": str(wait)}
    extra = {"errors": list(error.errors)} if error.errors else None
    return Problem(status, error.slug, error.detail, headers=headers, extra=extra)


def service_error_handler(
    statuses: Mapping[type[E], int],
) -> Callable[[Request, Exception], Awaitable[Response]]:
    """The exception handler for a service's errors, answering by its table. An error the table
    does not name is a bug: raised on, so it is logged once and answered 500."""

    async def handle(request: Request, exc: Exception) -> Response:
        problem = problem_for(exc, statuses)
        if problem is None:
            raise exc
        return problem_response(problem)

    return handle


def problem_response(problem: Problem) -> Response:
    body: dict[str, Any] = {
        "type": f"/problems/{problem.slug}",
        "title": problem.title,
        "status": problem.status,
        "detail": problem.detail or problem.title,
    }
    body.update(problem.extra)
    return Response(
        msgspec.json.encode(body),
        status_code=problem.status,
        media_type=PROBLEM_JSON,
        headers=problem.headers,
    )


async def _on_problem(request: Request, exc: Exception) -> Response:
    return problem_response(exc if isinstance(exc, Problem) else Problem(500))


async def _on_http_exception(request: Request, exc: Exception) -> Response:
    if not isinstance(exc, HTTPException):
        raise exc
    detail = exc.detail if isinstance(exc.detail, str) else ""
    if exc.status_code == 404:
        detail = f"no route for {request.method} {request.url.path}"
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        detail = f"{request.method} is not allowed on {request.url.path}"
        headers["Allow"] = ", ".join(_allowed(request))
    return problem_response(Problem(exc.status_code, detail=detail, headers=headers))


def _allowed(request: Request) -> list[str]:
    """Every method the path takes, over all the routes that have it: the router's own 405
    names only the first such route's."""
    methods: set[str] = set()
    for route in getattr(request.app, "routes", ()):
        match, _ = route.matches({**request.scope, "method": "GET"})
        if match is not Match.NONE and isinstance(route, Route) and route.methods:
            methods |= route.methods
    return sorted(methods)


async def _on_refused_value(request: Request, exc: Exception) -> Response:
    # PostgreSQL's data exceptions (a NUL in text, a number past its column) are values a
    # caller sent that a check before the database missed: theirs to fix, ours to log.
    log.warning("value refused by the database on %s %s: %s", request.method, request.url.path, exc)
    return problem_response(
        Problem(
            422, "invalid-values", "a value cannot be stored as given; check the text and numbers"
        )
    )


async def _on_database_unavailable(request: Request, exc: Exception) -> Response:
    log.warning("database unavailable on %s %s: %s", request.method, request.url.path, exc)
    return problem_response(
        Problem(
            503,
            "unavailable",
            "the database is unavailable; retry shortly",
            headers={"Retry-After": "5"},
        )
    )


def exception_handlers() -> dict[Any, Any]:
    """Expected failures. An unexpected one is left to `shared.web.RequestContextMiddleware`,
    which answers 500 with `Connection: close` and logs it once."""
    return {
        Problem: _on_problem,
        HTTPException: _on_http_exception,
        psycopg.DataError: _on_refused_value,
        psycopg.OperationalError: _on_database_unavailable,
        psycopg_pool.PoolTimeout: _on_database_unavailable,
    }


class BodyLimitMiddleware:
    """Answers 413 when a body exceeds the limit, whether declared or streamed.

    The default applies to every route; a route that needs a tighter limit passes it to
    `read_body`.
    """

    def __init__(self, app: ASGIApp, limit: int = DEFAULT_BODY_LIMIT) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = _unstorable_address(scope)
        if refused is not None:
            await send_problem(scope, send, refused)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await send_problem(scope, send, Problem(400, detail="bad Content-Length"))
                    return
                if declared > self.limit:
                    await send_problem(scope, send, too_large(self.limit))
                    return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise too_large(self.limit)
            return message

        await self.app(scope, limited_receive, send)


def _unstorable_address(scope: Scope) -> Problem | None:
    """A NUL in the path or a query parameter: no route or column can take it."""
    if "\x00" in scope["path"]:
        return Problem(400, detail="the path holds a NUL character")
    query: bytes = scope.get("query_string", b"")
    if b"%00" not in query:
        return None
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if "\x00" in name + value:
            return unstorable(name.replace("\x00", ""))
    return None


def too_large(limit: int) -> Problem:
    return Problem(413, detail=f"body exceeds {limit} bytes")


async def send_problem(scope: Scope, send: Send, problem: Problem) -> None:
    """Answer with a problem from ASGI middleware, without reading the request's body."""
    response = problem_response(problem)

    async def no_body() -> Message:
        return {"type": "http.disconnect"}

    await response(scope, no_body, send)


async def read_body(request: Request, limit: int = DEFAULT_BODY_LIMIT) -> bytes:
    """The raw body, refusing more than `limit` bytes (413)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def decode_json(raw: bytes, kind: type[T]) -> T:
    """Decode and validate a JSON body: 400 when it is not JSON, 422 when values are wrong,
    a text PostgreSQL cannot hold (NUL, a lone surrogate) or a byte that is not UTF-8 among
    them."""
    try:
        value = msgspec.json.decode(raw, type=kind, strict=True)
    except msgspec.ValidationError as error:
        value = _with_whole_numbers(raw, kind, error)
    except msgspec.DecodeError as error:
        raise Problem(400, "malformed-json", f"body is not valid JSON: {error}") from None
    except UnicodeDecodeError:
        raise not_utf8(raw) from None
    # Only an escape can put either into a decoded string: most bodies skip the walk.
    if b"\\u" in raw:
        found = jsonsafe.unstorable_text(msgspec.to_builtins(value))
        if found is not None:
            raise unstorable(found)
    return value


def _with_whole_numbers(raw: bytes, kind: type[T], error: msgspec.ValidationError) -> T:
    """JSON has one number type, and JSON Schema's integer takes `2.0`: where an integer was
    expected and a float came, the body is read again with each whole float as an integer."""
    refused = error
    if "got `float`" in str(error):
        try:
            return msgspec.convert(_whole(msgspec.json.decode(raw)), kind, strict=True)
        except msgspec.ValidationError as again:
            refused = again
        except UnicodeDecodeError:
            raise not_utf8(raw) from None
    raise Problem(
        422, "invalid-body", str(refused), extra={"errors": [field_error(str(refused))]}
    ) from None


def _whole(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _whole(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_whole(child) for child in value]
    return value


def unstorable(field: str) -> Problem:
    return Problem(
        422,
        "invalid-body",
        f"{field or 'the body'} holds a NUL character or a lone surrogate, which text cannot",
        extra={"errors": [FieldError(field, "bad-format")]},
    )


def not_utf8(raw: bytes) -> Problem:
    """A body with a byte that is not UTF-8 (JSON's only encoding), refused at the string that
    holds it: read again with each such byte as a lone surrogate, the string is the one
    `unstorable_text` finds. 400 when the rest is not JSON either."""
    try:
        value = json.loads(raw.decode("utf-8", "surrogateescape"))
    except ValueError:
        return Problem(400, "malformed-json", "body is not valid JSON: it is not UTF-8")
    # A name can hold the byte too: the path is told with it replaced.
    field = (jsonsafe.unstorable_text(value) or "").encode("utf-8", "replace").decode()
    return Problem(
        422,
        "invalid-body",
        f"{field or 'the body'} holds a byte that is not UTF-8",
        extra={"errors": [FieldError(field, "bad-format")]},
    )


def read_query(params: QueryParams, kind: type[S]) -> S:
    """A query string read as `kind`, whose fields are the parameters; 422 at the parameter
    when a value does not fit. Text is read leniently (`5` is a number), but never more than
    the document says: a parameter given twice, `null` for a value, or a number for a time
    (which msgspec's lax mode would read as seconds since 1970) is refused."""
    repeated = sorted({name for name, _ in params.multi_items() if len(params.getlist(name)) > 1})
    if repeated:
        raise _bad_parameter(
            f"{', '.join(repeated)} given more than once", repeated[0], "duplicate"
        )
    for name in _time_fields(kind) & params.keys():
        try:
            msgspec.convert(params[name], _TIME_FIELDS[kind][name], strict=True)
        except msgspec.ValidationError:
            raise _bad_parameter(
                f"{name}: {params[name]!r} is not an RFC 3339 {_TIME_FIELDS[kind][name].__name__}",
                name,
                "bad-format",
            ) from None
    try:
        value = msgspec.convert(dict(params), kind, strict=False)
    except msgspec.ValidationError as error:
        wrong = field_error(str(error))
        raise _bad_parameter(str(error).replace("$.", ""), wrong.field, wrong.code) from None
    # Read leniently, `null` leaves a number or a date unset: given, it is not a value.
    attributes = dict(zip(kind.__struct_encode_fields__, kind.__struct_fields__, strict=True))
    unset = [name for name in params if getattr(value, attributes.get(name, ""), "") is None]
    if unset:
        raise _bad_parameter(
            f"{unset[0]}: {params[unset[0]]!r} is not a value", unset[0], "bad-format"
        )
    return value


def _bad_parameter(detail: str, field: str, code: FieldCode) -> Problem:
    return Problem(422, "invalid-values", detail, extra={"errors": [FieldError(field, code)]})


# Each query type's fields that hold a time or a date, with the type to read them as.
_TIME_FIELDS: dict[type, dict[str, type]] = {}


def _time_fields(kind: type[msgspec.Struct]) -> set[str]:
    if kind not in _TIME_FIELDS:
        found: dict[str, type] = {}
        info = msgspec.inspect.type_info(kind)
        if not isinstance(info, msgspec.inspect.StructType):
            raise TypeError(f"{kind!r} is not a struct")
        for field in info.fields:
            kind_of = _bare(field.type)
            options = (
                kind_of.types if isinstance(kind_of, msgspec.inspect.UnionType) else (kind_of,)
            )
            for option in map(_bare, options):
                if isinstance(option, msgspec.inspect.DateTimeType):
                    found[field.encode_name] = dt.datetime
                elif isinstance(option, msgspec.inspect.DateType):
                    found[field.encode_name] = dt.date
        _TIME_FIELDS[kind] = found
    return set(_TIME_FIELDS[kind])


def _bare(kind: msgspec.inspect.Type) -> msgspec.inspect.Type:
    """A type without the constraints (`Annotated[..., Meta(...)]`) around it."""
    while isinstance(kind, msgspec.inspect.Metadata):
        kind = kind.type
    return kind


async def json_body(request: Request, kind: type[T], limit: int = DEFAULT_BODY_LIMIT) -> T:
    return decode_json(await read_body(request, limit), kind)
