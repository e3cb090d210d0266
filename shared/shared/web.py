"""The app every service is: its routes plus health, readiness, metrics, request ids,
problem+json errors, a body limit and a lifespan that owns the database pool."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import random
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import psycopg_pool
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared import migrate
from shared.breaker import Breakers
from shared.db import Pool, create_pool
from shared.errors import BodyLimitMiddleware, Problem, problem_response, send_problem
from shared.errors import exception_handlers as default_exception_handlers
from shared.logging import request_id
from shared.settings import CommonSettings, Networks, Secret

log = logging.getLogger("shared.web")
access_log = logging.getLogger("access")

HTTP_REQUESTS = Counter(
    "http_requests_total", "HTTP requests answered", ["route", "method", "status"]
)
HTTP_DURATION = Histogram(
    "http_request_duration_seconds",
    "Time to answer an HTTP request",
    ["route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


@dataclass
class Runtime:
    """What the lifespan owns, reachable from handlers as `request.app.state.runtime`.

    `resources` is what the service's own lifespan yielded (its clients, its notifier), of the
    service's own type: handlers read it through `resources(request, TheType)`.
    """

    settings: CommonSettings
    pool: Pool
    expected_migration: int
    draining: bool = False
    resources: object = None
    # The app's breakers, one per dependency and target it calls; `/readyz` says which are open.
    breakers: Breakers = field(default_factory=Breakers)


def runtime(request: Request) -> Runtime:
    value = request.app.state.runtime
    if not isinstance(value, Runtime):
        raise TypeError("the app's lifespan has not run")
    return value


R = TypeVar("R")


def resources(request: Request, kind: type[R]) -> R:
    """The service's own lifespan resources, checked to be of the type it declared."""
    value = runtime(request).resources
    if not isinstance(value, kind):
        raise TypeError(f"the app's resources are not a {kind.__name__}")
    return value


# The service's part of the lifespan: given the runtime, yields its resources.
ServiceLifespan = Callable[[Runtime], AbstractAsyncContextManager[object]]


def create_service_app(
    settings: CommonSettings,
    routes: Sequence[BaseRoute],
    *,
    service_lifespan: ServiceLifespan | None = None,
    body_limit: int = 1024 * 1024,
    pool_factory: Callable[[CommonSettings], Pool] = create_pool,
    exception_handlers: dict[Any, Any] | None = None,
    breakers: Breakers | None = None,
) -> Starlette:
    migrations_dir = Path(settings.migrations_dir) if settings.migrations_dir else None
    expected = migrate.latest_version(migrations_dir or migrate.default_dir())

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        pool = pool_factory(settings)
        # Not waiting: the process serves /readyz (503) until the database is reachable.
        await pool.open(wait=False)
        state = Runtime(
            settings=settings,
            pool=pool,
            expected_migration=expected,
            breakers=breakers or Breakers(),
        )
        app.state.runtime = state
        log.info("%s listening on %s:%d", settings.service_name, settings.host, settings.port)
        try:
            if service_lifespan is None:
                yield
            else:
                async with service_lifespan(state) as owned:
                    state.resources = owned
                    yield
        finally:
            state.draining = True
            await pool.close(timeout=settings.shutdown_timeout)
            log.info("%s stopped", settings.service_name)

    all_routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *routes,
    ]
    app = Starlette(
        routes=all_routes,
        lifespan=lifespan,
        exception_handlers={**default_exception_handlers(), **(exception_handlers or {})},
        middleware=[
            Middleware(RequestContextMiddleware, methods=route_methods(all_routes)),
            Middleware(BodyLimitMiddleware, limit=body_limit),
        ],
    )
    return app


# A page's document: scripts and styles from its own origin only, no inline code, nothing from
# elsewhere (the panel and the simulators' pages).
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": PAGE_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


# What reading a caller's fields raises when one is missing or of the wrong kind: their
# mistake, refused, not a fault of ours (the simulators' control calls and Bot API methods).
CALLERS_MISTAKES = (LookupError, ValueError, TypeError, ArithmeticError)


def create_plain_app(routes: Sequence[BaseRoute], *, body_limit: int = 1024 * 1024) -> Starlette:
    """An app without a database (the simulated servers): same errors, health and metrics."""

    async def ready(request: Request) -> Response:
        return JSONResponse({"status": "ready"})

    all_routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", ready, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *routes,
    ]
    return Starlette(
        routes=all_routes,
        exception_handlers={
            **default_exception_handlers(),
            **dict.fromkeys(CALLERS_MISTAKES, _bad_values),
        },
        middleware=[
            Middleware(RequestContextMiddleware, methods=route_methods(all_routes)),
            Middleware(BodyLimitMiddleware, limit=body_limit),
        ],
    )


def bad_values(exc: Exception) -> Problem:
    """A simulator's control call read a field that is missing or of the wrong kind: the
    caller's mistake (a test's or a person's at the terminal), said as the services say it."""
    detail = f"{type(exc).__name__}: {exc}"[:300]
    return Problem(422, "invalid-values", f"a field is missing or wrong: {detail}")


async def _bad_values(request: Request, exc: Exception) -> Response:
    return problem_response(bad_values(exc))


def client_address(request: Request, trusted_proxies: Networks) -> str:
    """Who is asking: the peer, or, when the peer is a trusted proxy, the last
    `X-Forwarded-For` hop that is not one (each proxy appends the address it saw)."""
    peer = request.client.host if request.client else "0.0.0.0"  # noqa: S104 - unknown peer
    if not _trusted(peer, trusted_proxies):
        return peer
    hops = [h.strip() for h in request.headers.get("x-forwarded-for", "").split(",") if h.strip()]
    for hop in reversed(hops):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            # A hop a trusted proxy would not write: stop believing the header here.
            return peer
        if not _trusted(hop, trusted_proxies):
            return hop
    return peer


def _trusted(address: str, networks: Networks) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def bearer_token(request: Request) -> str:
    """The token of `Authorization: Bearer <token>`, or 401."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Problem(
            401,
            "missing-credentials",
            "send Authorization: Bearer <token>",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return token.strip()


def require_bearer(request: Request, secret: Secret) -> None:
    """401 unless the bearer token equals `secret` (compared in constant time)."""
    if not secret.matches(bearer_token(request)):
        raise Problem(
            401,
            "bad-credentials",
            "the bearer token is wrong",
            headers={"WWW-Authenticate": "Bearer"},
        )


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    state = runtime(request)
    if state.draining:
        raise Problem(503, "not-ready", "shutting down")
    try:
        async with state.pool.connection(timeout=2.0) as conn:
            cur = await conn.execute(
                "SELECT coalesce(max(version), 0) AS version FROM schema_migrations"
            )
            row = await cur.fetchone()
    except psycopg.errors.UndefinedTable:
        raise Problem(503, "not-ready", "migrations have not been applied") from None
    except (psycopg.Error, psycopg_pool.PoolTimeout, OSError):
        raise Problem(503, "not-ready", "database unreachable") from None
    applied = int(row["version"]) if row else 0
    if applied < state.expected_migration:
        raise Problem(
            503,
            "not-ready",
            f"database is at migration {applied}, this build needs {state.expected_migration}",
        )
    # What this process sees of its dependencies: a breaker open is said, not a 503 (the
    # process itself can serve; its work for that dependency waits).
    return JSONResponse(
        {"status": "ready", "migration": applied, "breakers": state.breakers.report()}
    )


async def metrics(request: Request) -> Response:
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


# Recorded for a request whose client went away before an answer could be sent (nginx's code).
CLIENT_CLOSED = 499
# Recorded for a request the server cancelled at its shutdown deadline.
CUT_AT_SHUTDOWN = 503
_STANDARD_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_methods(routes: Sequence[BaseRoute]) -> frozenset[str]:
    """The methods some route accepts: the only values the `method` label may take, with
    `other` for the rest (a client must not be able to mint label values)."""
    methods: set[str] = set()
    for route in routes:
        methods.update(getattr(route, "methods", None) or ())
    return frozenset(methods & _STANDARD_METHODS)


class RequestContextMiddleware:
    """A request id on every log line and response, one access line and metrics per request,
    and the last word on failures: an unexpected error is logged once and answered 500 with
    `Connection: close`; a client that went away is not an error."""

    def __init__(self, app: ASGIApp, methods: frozenset[str] = _STANDARD_METHODS) -> None:
        self.app = app
        self.methods = methods

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        presented = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        # A correlation id, not a secret: uuid4 would read the kernel's random source on every
        # request, a syscall that showed at 5% of the simulated Telegram's CPU.
        rid = presented if _REQUEST_ID.match(presented) else f"{random.getrandbits(128):032x}"
        token = request_id.set(rid)
        started = time.perf_counter()
        status = 500
        response_started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = message["status"]
                response_started = True
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", rid.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except ClientDisconnect:
            status = CLIENT_CLOSED
            log.info("client went away before the request was read whole")
        except asyncio.CancelledError:
            # The server gave up on it at the shutdown deadline: announced, not a failure.
            status = CUT_AT_SHUTDOWN
            log.warning("request cut at the shutdown deadline")
            raise
        except Exception as error:
            log.error("unhandled error on %s %s", scope["method"], scope["path"], exc_info=error)
            if response_started:
                # Too late for an answer: the server closes the connection.
                return
            status = 500
            problem = Problem(
                500, detail="internal error; it has been logged", headers={"Connection": "close"}
            )
            await send_problem(scope, send_with_id, problem)
        finally:
            elapsed = time.perf_counter() - started
            route = _route_template(scope)
            method = scope["method"] if scope["method"] in self.methods else "other"
            HTTP_REQUESTS.labels(route, method, str(status)).inc()
            HTTP_DURATION.labels(route).observe(elapsed)
            if route not in ("/healthz", "/readyz", "/metrics"):
                access_log.info(
                    "%s %s %d",
                    method,
                    route,
                    status,
                    extra={
                        "method": method,
                        "path": route,
                        "status": status,
                        "duration_ms": round(elapsed * 1000, 2),
                    },
                )
            request_id.reset(token)


def _route_template(scope: Scope) -> str:
    """The matched route's path template, so metrics never carry ids or tokens."""
    # Starlette's router leaves the route it chose in the scope; matching again is the
    # fallback for requests that never reached it.
    chosen = scope.get("route")
    if isinstance(chosen, BaseRoute):
        return str(getattr(chosen, "path", "unmatched"))
    app = scope.get("app")
    for route in getattr(app, "routes", ()):
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return str(getattr(route, "path", "unmatched"))
    return "unmatched"
