"""Errors over real HTTP: problem+json for every 4xx and 5xx, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import msgspec
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shared.errors import json_body
from shared.settings import CommonSettings, Reader
from shared.testing import serve_in_thread
from shared.web import create_service_app, runtime
from tests.conftest import HTTP


class Greeting(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    times: int


async def greet(request: Request) -> Response:
    body = await json_body(request, Greeting, limit=256)
    return JSONResponse({"hello": body.name * body.times})


async def store(request: Request) -> Response:
    """A handler that forgot to check its text: PostgreSQL's refusal still answers 422."""
    text = json.loads(await request.body())["text"]
    async with runtime(request).pool.connection() as conn:
        row = await (await conn.execute("SELECT length(%s::text) AS n", (text,))).fetchone()
    return JSONResponse({"length": row["n"] if row else None})


async def fail(request: Request) -> Response:
    raise RuntimeError("secret internal detail")


@pytest.fixture
def base_url(database_url: str) -> Iterator[str]:
    settings = CommonSettings.read(Reader({"DATABASE_URL": database_url}), "problems", 1)
    app = create_service_app(
        settings,
        [
            Route("/greet", greet, methods=["POST"]),
            Route("/store", store, methods=["POST"]),
            Route("/fail", fail, methods=["GET"]),
        ],
        body_limit=4096,
    )
    with serve_in_thread(app) as url:
        yield url


def assert_problem(response: httpx.Response, status: int, slug: str) -> dict[str, object]:
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == f"/problems/{slug}"
    assert body["status"] == status
    assert body["title"]
    assert body["detail"]
    assert "Traceback" not in response.text
    return dict(body)


def test_unknown_route__404(base_url: str) -> None:
    assert_problem(HTTP.get(f"{base_url}/nowhere"), 404, "not-found")


def test_wrong_method__405(base_url: str) -> None:
    assert_problem(HTTP.delete(f"{base_url}/healthz"), 405, "method-not-allowed")


def test_malformed_json__400(base_url: str) -> None:
    response = HTTP.post(f"{base_url}/greet", content=b"{not json")
    assert_problem(response, 400, "malformed-json")


@pytest.mark.parametrize(
    ("payload", "names"),
    [
        ({"name": "a"}, "`times`"),
        ({"name": "a", "times": "2"}, "$.times"),
        ({"name": 5, "times": 2}, "$.name"),
        ({"name": "a", "times": 2, "extra": True}, "`extra`"),
        ([1, 2], "got `array`"),
    ],
)
def test_wrong_shape__422_names_the_field(base_url: str, payload: object, names: str) -> None:
    body = assert_problem(HTTP.post(f"{base_url}/greet", json=payload), 422, "invalid-body")
    assert names in str(body["detail"])


def test_valid_body__200(base_url: str) -> None:
    response = HTTP.post(f"{base_url}/greet", json={"name": "ab", "times": 2})
    assert response.json() == {"hello": "abab"}


def test_whole_float_for_an_integer__taken_as_that_integer_a_fraction_422(base_url: str) -> None:
    # JSON Schema's integer takes 2.0: a client may write it so.
    response = HTTP.post(f"{base_url}/greet", content=b'{"name": "ab", "times": 2.0}')
    assert response.json() == {"hello": "abab"}
    fraction = HTTP.post(f"{base_url}/greet", content=b'{"name": "ab", "times": 2.5}')
    body = assert_problem(fraction, 422, "invalid-body")
    assert body["errors"] == [{"field": "times", "code": "not-a-number"}]


def test_nul_in_a_text_field__422_at_that_field(base_url: str) -> None:
    raw = b'{"name": "a\\u0000b", "times": 1}'
    body = assert_problem(HTTP.post(f"{base_url}/greet", content=raw), 422, "invalid-body")
    assert body["errors"] == [{"field": "name", "code": "bad-format"}]
    # An escaped backslash before "u0000" is text like any other.
    kept = HTTP.post(f"{base_url}/greet", content=b'{"name": "a\\\\u0000", "times": 1}')
    assert kept.json() == {"hello": "a\\u0000"}


def test_lone_surrogate__400_not_json_we_take(base_url: str) -> None:
    raw = b'{"name": "a\\ud800", "times": 1}'
    assert_problem(HTTP.post(f"{base_url}/greet", content=raw), 400, "malformed-json")


def test_nul_in_path_or_query__4xx_before_any_handler(base_url: str) -> None:
    body = assert_problem(HTTP.get(f"{base_url}/healthz?q=a%00b"), 422, "invalid-body")
    assert body["errors"] == [{"field": "q", "code": "bad-format"}]
    assert_problem(HTTP.get(f"{base_url}/heal%00thz"), 400, "malformed-request")
    assert HTTP.get(f"{base_url}/healthz?q=a%2500b").status_code == 200


def test_nul_reaching_the_database__422_not_500(base_url: str) -> None:
    stored = HTTP.post(f"{base_url}/store", content=b'{"text": "ab"}')
    assert stored.json() == {"length": 2}
    refused = HTTP.post(f"{base_url}/store", content=b'{"text": "a\\u0000b"}')
    assert_problem(refused, 422, "invalid-values")


def test_route_body_limit__413(base_url: str) -> None:
    response = HTTP.post(f"{base_url}/greet", json={"name": "x" * 300, "times": 1})
    assert_problem(response, 413, "body-too-large")


def test_app_body_limit__413_declared_and_streamed(base_url: str) -> None:
    assert_problem(HTTP.post(f"{base_url}/greet", content=b"x" * 5000), 413, "body-too-large")

    def chunks() -> Iterator[bytes]:
        for _ in range(10):
            yield b"y" * 1000

    streamed = HTTP.post(f"{base_url}/greet", content=chunks())
    assert_problem(streamed, 413, "body-too-large")


def test_unexpected_error__500_without_details(base_url: str) -> None:
    response = HTTP.get(f"{base_url}/fail")
    assert_problem(response, 500, "internal-error")
    assert "secret internal detail" not in response.text
    assert "RuntimeError" not in response.text


def test_request_id__echoed_or_generated(base_url: str) -> None:
    given = HTTP.get(f"{base_url}/healthz", headers={"X-Request-Id": "abc-123"})
    assert given.headers["x-request-id"] == "abc-123"
    made = HTTP.get(f"{base_url}/healthz", headers={"X-Request-Id": "bad id\twith space"})
    assert made.headers["x-request-id"] != "bad id\twith space"
    assert len(made.headers["x-request-id"]) == 32


def test_metrics__prometheus_text_with_request_counts(base_url: str) -> None:
    HTTP.get(f"{base_url}/nowhere")
    text = HTTP.get(f"{base_url}/metrics").text
    assert "# TYPE http_requests_total counter" in text
    assert 'http_requests_total{method="GET",route="unmatched",status="404"}' in text
