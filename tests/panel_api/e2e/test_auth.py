"""Signing in to the panel over real HTTP, against the seeded owner."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator

import httpx
import jwt
import pytest

from panel_api.app import create_app
from panel_api.auth import ISSUER
from panel_api.seed import seed
from panel_api.settings import load
from shared.testing import serve_in_thread
from tests.conftest import SECRETS, service_env

PASSWORD = "correct horse battery"


@pytest.fixture
def panel(database_url: str) -> Iterator[str]:
    assert seed(database_url, "Owner@Example.com", PASSWORD) is True
    with serve_in_thread(create_app(load(service_env(database_url)))) as url:
        yield url


def login(panel: str, email: str, password: str) -> httpx.Response:
    return httpx.post(f"{panel}/v1/auth/login", json={"email": email, "password": password})


def test_seed__only_on_an_empty_database(database_url: str) -> None:
    assert seed(database_url, "owner@example.com", PASSWORD) is True
    assert seed(database_url, "other@example.com", "another password") is False


def test_login__seeded_owner_gets_a_token_that_opens_me(panel: str) -> None:
    response = login(panel, "owner@example.com", PASSWORD)
    assert response.status_code == 200
    token = response.json()["access_token"]
    me = httpx.get(f"{panel}/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert me.status_code == 200
    assert me.json()["email"] == "owner@example.com"
    assert me.json()["role"] == "owner"


@pytest.mark.parametrize(
    ("email", "password"),
    [("owner@example.com", "wrong password"), ("nobody@example.com", PASSWORD)],
)
def test_login__bad_credentials_401_same_answer(panel: str, email: str, password: str) -> None:
    response = login(panel, email, password)
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"] == "/problems/bad-credentials"


def test_login__malformed_bodies(panel: str) -> None:
    assert httpx.post(f"{panel}/v1/auth/login", content=b"{").status_code == 400
    assert httpx.post(f"{panel}/v1/auth/login", json={"email": "x"}).status_code == 422
    assert httpx.post(f"{panel}/v1/auth/login", json={"email": 1, "password": 2}).status_code == 422


def forge(secret: str, **overrides: object) -> str:
    now = dt.datetime.now(dt.UTC)
    claims: dict[str, object] = {
        "sub": "1",
        "role": "owner",
        "iss": ISSUER,
        "iat": now,
        "exp": now + dt.timedelta(minutes=5),
    }
    claims.update(overrides)
    return jwt.encode(claims, secret, algorithm="HS256")


# Tokens are built inside the test (their expiry counts from now), never at collection.
@pytest.mark.parametrize(
    ("make_token", "slug"),
    [
        (lambda: forge("some-other-secret-of-thirty-two-bytes!!"), "invalid-token"),
        (
            lambda: forge(SECRETS["JWT_SECRET"], exp=dt.datetime(2020, 1, 1, tzinfo=dt.UTC)),
            "token-expired",
        ),
        (lambda: forge(SECRETS["JWT_SECRET"], iss="someone-else"), "invalid-token"),
        (lambda: "not.a.jwt", "invalid-token"),
        (lambda: jwt.encode({"sub": "1", "iss": ISSUER}, "", algorithm="none"), "invalid-token"),
    ],
)
def test_me__forged_expired_or_malformed_tokens_401(
    panel: str, make_token: Callable[[], str], slug: str
) -> None:
    token = make_token()
    response = httpx.get(f"{panel}/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401
    assert response.json()["type"] == f"/problems/{slug}"


def test_me__without_credentials_401(panel: str) -> None:
    response = httpx.get(f"{panel}/v1/me")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("length", [73, 200, 3000])
def test_login__password_beyond_bcrypts_72_bytes_is_401_not_500(panel: str, length: int) -> None:
    # Starts with the real password: bcrypt would have read only its first 72 bytes.
    response = login(panel, "owner@example.com", (PASSWORD + "x" * length)[:length])
    assert response.status_code == 401
    assert response.json()["type"] == "/problems/bad-credentials"
