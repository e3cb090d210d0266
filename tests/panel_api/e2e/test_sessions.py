"""Refresh tokens over real HTTP: rotation, reuse, the grace for two tabs, logout."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from http.cookies import SimpleCookie

import httpx
import psycopg
import pytest

from panel_api.app import create_app
from panel_api.seed import seed
from shared.clock import ManualClock
from shared.testing import serve_in_thread
from shared.tls import verified
from tests.conftest import HTTP, TEST_BCRYPT_ROUNDS, panel_settings

PASSWORD = "correct horse battery"
CSRF = {"X-Requested-With": "gatehouse"}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def panel(database_url: str, clock: ManualClock) -> Iterator[str]:
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    # The panel reads time from this clock: the test moves it instead of waiting.
    with serve_in_thread(create_app(panel_settings(database_url), clock=clock)) as url:
        yield url


def refresh_cookie(response: httpx.Response) -> SimpleCookie:
    cookie: SimpleCookie = SimpleCookie()
    for header in response.headers.get_list("set-cookie"):
        cookie.load(header)
    return cookie


def signed_in(panel: str) -> tuple[str, str]:
    response = HTTP.post(
        f"{panel}/v1/auth/login", json={"email": "owner@example.com", "password": PASSWORD}
    )
    assert response.status_code == 200
    return response.json()["access_token"], refresh_cookie(response)["gatehouse_refresh"].value


def refresh(panel: str, token: str, headers: dict[str, str] = CSRF) -> httpx.Response:
    # The cookie is `Secure`: a client sends it only over HTTPS, so the test sends it itself.
    return HTTP.post(
        f"{panel}/v1/auth/refresh", headers={**headers, "Cookie": f"gatehouse_refresh={token}"}
    )


def test_login__refresh_cookie_is_httponly_secure_strict_and_scoped(panel: str) -> None:
    response = HTTP.post(
        f"{panel}/v1/auth/login", json={"email": "owner@example.com", "password": PASSWORD}
    )
    morsel = refresh_cookie(response)["gatehouse_refresh"]
    assert morsel["httponly"] and morsel["secure"]
    assert morsel["samesite"].lower() == "strict"
    assert morsel["path"] == "/v1/auth"
    assert "gatehouse_refresh" not in response.text


def test_refresh_token__stored_only_as_its_hash(panel: str, database_url: str) -> None:
    _, token = signed_in(panel)
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT row_to_json(t)::text, token_hash FROM refresh_tokens t")
        stored = rows.fetchall()
    assert len(stored) == 1
    assert token not in stored[0][0]
    assert bytes(stored[0][1]) == hashlib.sha256(token.encode()).digest()


def test_refresh__rotates_and_the_new_pair_works(panel: str) -> None:
    _, first = signed_in(panel)
    answer = refresh(panel, first)
    assert answer.status_code == 200
    second = refresh_cookie(answer)["gatehouse_refresh"].value
    assert second != first
    me = HTTP.get(
        f"{panel}/v1/me", headers={"Authorization": f"Bearer {answer.json()['access_token']}"}
    )
    assert me.status_code == 200
    assert refresh(panel, second).status_code == 200


def test_refresh__without_the_header_is_403(panel: str) -> None:
    _, token = signed_in(panel)
    response = refresh(panel, token, headers={})
    assert response.status_code == 403
    assert response.headers["content-type"] == "application/problem+json"
    # Refused before anything happened: the token still works.
    assert refresh(panel, token).status_code == 200


def test_refresh__rotated_token_again_after_the_grace_revokes_the_family(
    panel: str, clock: ManualClock
) -> None:
    _, first = signed_in(panel)
    second = refresh_cookie(refresh(panel, first))["gatehouse_refresh"].value
    clock.advance(11)
    stolen = refresh(panel, first)
    assert stolen.status_code == 401
    assert stolen.json()["type"] == "/problems/invalid-token"
    # The whole family is gone, the holder's latest token too.
    assert refresh(panel, second).status_code == 401


def test_refresh__two_tabs_at_once_get_the_same_new_pair(panel: str, clock: ManualClock) -> None:
    _, token = signed_in(panel)

    async def both() -> list[httpx.Response]:
        async with httpx.AsyncClient(verify=verified()) as client:
            calls = [
                client.post(
                    f"{panel}/v1/auth/refresh",
                    headers={**CSRF, "Cookie": f"gatehouse_refresh={token}"},
                )
                for _ in range(2)
            ]
            return list(await asyncio.gather(*calls))

    one, two = asyncio.run(both())
    assert (one.status_code, two.status_code) == (200, 200)
    assert one.json()["access_token"] == two.json()["access_token"]
    new = refresh_cookie(one)["gatehouse_refresh"].value
    assert refresh_cookie(two)["gatehouse_refresh"].value == new
    # Within the grace window a third presentation gets the same pair again, and the session
    # goes on from it.
    clock.advance(9)
    assert refresh_cookie(refresh(panel, token))["gatehouse_refresh"].value == new
    assert refresh(panel, new).status_code == 200


def test_logout__revokes_the_family(panel: str) -> None:
    _, first = signed_in(panel)
    second = refresh_cookie(refresh(panel, first))["gatehouse_refresh"].value
    out = HTTP.post(
        f"{panel}/v1/auth/logout", headers={**CSRF, "Cookie": f"gatehouse_refresh={second}"}
    )
    assert out.status_code == 204
    assert refresh_cookie(out)["gatehouse_refresh"].value == ""
    assert refresh(panel, second).status_code == 401
    assert refresh(panel, first).status_code == 401


def test_refresh__expired_token_is_401(panel: str, clock: ManualClock) -> None:
    _, token = signed_in(panel)
    clock.advance(15 * 24 * 3600)
    assert refresh(panel, token).status_code == 401


@pytest.mark.parametrize("cookie", ["", "not-a-token", "x" * 5000])
def test_refresh__unknown_or_missing_token_is_401(panel: str, cookie: str) -> None:
    response = refresh(panel, cookie)
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"


def test_access_token__expires_after_fifteen_minutes_on_the_panels_clock(
    panel: str, clock: ManualClock
) -> None:
    access, _ = signed_in(panel)
    bearer = {"Authorization": f"Bearer {access}"}
    clock.advance(899)
    assert HTTP.get(f"{panel}/v1/me", headers=bearer).status_code == 200
    clock.advance(1)
    expired = HTTP.get(f"{panel}/v1/me", headers=bearer)
    assert (expired.status_code, expired.json()["type"]) == (401, "/problems/token-expired")
