"""First start: the one-time setup code creates the owner, once."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import psycopg
import pytest

from panel_api.app import create_app
from panel_api.seed import seed
from shared.clock import ManualClock
from shared.testing import serve_in_thread
from tests.conftest import (
    HTTP,
    TEST_BCRYPT_ROUNDS,
    ServiceProcess,
    panel_settings,
    service_env,
    wait_until,
)

PASSWORD = "a long enough password"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def codes() -> list[str]:
    return []


@pytest.fixture
def panel(database_url: str, clock: ManualClock, codes: list[str]) -> Iterator[str]:
    app = create_app(panel_settings(database_url), clock=clock, announce=codes.append)
    with serve_in_thread(app) as url:
        yield url


def offered(codes: list[str]) -> str:
    """The code the panel offered at start (it does so as soon as the database answers)."""
    wait_until(lambda: codes, 10, "a setup code")
    return codes[-1]


def set_up(panel: str, code: str, email: str = "boss@example.com") -> httpx.Response:
    return HTTP.post(f"{panel}/v1/setup", json={"code": code, "email": email, "password": PASSWORD})


def test_setup__the_code_creates_the_owner_once_then_404(panel: str, codes: list[str]) -> None:
    code = offered(codes)
    created = set_up(panel, code)
    assert created.status_code == 201, created.text
    assert created.json()["role"] == "owner"
    login = HTTP.post(
        f"{panel}/v1/auth/login", json={"email": "boss@example.com", "password": PASSWORD}
    )
    assert login.status_code == 200
    again = set_up(panel, code, "second@example.com")
    assert again.status_code == 404
    assert again.headers["content-type"] == "application/problem+json"


def test_setup__code_stored_only_as_its_hash(
    panel: str, codes: list[str], database_url: str
) -> None:
    code = offered(codes)
    with psycopg.connect(database_url) as conn:
        stored = conn.execute("SELECT row_to_json(s)::text FROM setup_codes s").fetchall()
    assert len(stored) == 1
    assert code not in stored[0][0]
    assert code.replace("-", "") not in stored[0][0]


def test_setup__expired_code_is_401(panel: str, codes: list[str], clock: ManualClock) -> None:
    code = offered(codes)
    clock.advance(3601)
    expired = set_up(panel, code)
    assert (expired.status_code, expired.json()["type"]) == (401, "/problems/setup-code-expired")


def test_setup__wrong_codes_are_401_then_throttled(panel: str, codes: list[str]) -> None:
    code = offered(codes)
    for _ in range(10):
        wrong = set_up(panel, "AAAA-BBBB-CCCC")
        assert (wrong.status_code, wrong.json()["type"]) == (401, "/problems/bad-setup-code")
    throttled = set_up(panel, code)
    assert throttled.status_code == 429
    assert int(throttled.headers["retry-after"]) >= 1


@pytest.mark.parametrize(
    "body",
    [
        {"code": "X", "email": "boss@example.com", "password": "short"},
        {"code": "X", "email": "boss\u0000@example.com", "password": PASSWORD},
        {"code": "X", "email": "boss@example.com", "password": "é" * 40},
        {"code": "X", "email": "boss@example.com"},
    ],
    ids=["short password", "nul in email", "over 72 bytes", "missing field"],
)
def test_setup__bad_bodies_are_422(panel: str, codes: list[str], body: dict[str, str]) -> None:
    offered(codes)
    response = HTTP.post(f"{panel}/v1/setup", json=body)
    assert response.status_code == 422, response.text


def test_setup__no_code_once_an_owner_exists(database_url: str, codes: list[str]) -> None:
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    app = create_app(panel_settings(database_url), announce=codes.append)
    with serve_in_thread(app) as url:
        assert set_up(url, "AAAA-BBBB-CCCC").status_code == 404
    assert codes == []


def test_setup__a_real_panel_process_prints_its_code(
    start_service: object, database_url: str
) -> None:
    panel: ServiceProcess = start_service(  # type: ignore[operator]
        "panel_api", env=service_env(database_url)
    )
    wait_until(lambda: "No owner yet" in panel.output(), 15, "the printed setup code")
    # On one line, the code last, as a person copies it.
    [line] = [line for line in panel.output().splitlines() if "No owner yet" in line]
    code = line.rsplit(" ", 1)[-1]
    assert re.fullmatch(r"[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}", code), line
    assert set_up(panel.url, code).status_code == 201
