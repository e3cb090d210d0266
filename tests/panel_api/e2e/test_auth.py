"""Signing in to the panel over real HTTP, against the seeded owner."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Iterator

import httpx
import jwt
import psycopg
import pytest

from panel_api.app import create_app
from panel_api.auth import SIGN_IN_LIMITS, audience, issuer
from panel_api.seed import seed
from panel_api.sessions import DEVICE_COOKIE
from shared.testing import serve_in_thread
from tests.conftest import HTTP, SECRETS, TEST_BCRYPT_ROUNDS, panel_settings

PASSWORD = "correct horse battery"
ADDRESS_LIMIT = SIGN_IN_LIMITS.address


@pytest.fixture
def panel(database_url: str) -> Iterator[str]:
    assert seed(database_url, "Owner@Example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    with serve_in_thread(create_app(panel_settings(database_url))) as url:
        yield url


@pytest.fixture
def installation(database_url: str) -> str:
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT name::text FROM installation").fetchone()
    assert row is not None
    return str(row[0])


def login(panel: str, email: str, password: str) -> httpx.Response:
    return HTTP.post(f"{panel}/v1/auth/login", json={"email": email, "password": password})


def test_seed__only_on_an_empty_database(database_url: str) -> None:
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    assert seed(database_url, "other@example.com", "another password", TEST_BCRYPT_ROUNDS) is False


def test_login__seeded_owner_gets_a_token_that_opens_me(panel: str) -> None:
    response = login(panel, "owner@example.com", PASSWORD)
    assert response.status_code == 200
    token = response.json()["access_token"]
    me = HTTP.get(f"{panel}/v1/me", headers={"Authorization": f"Bearer {token}"})
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
    assert HTTP.post(f"{panel}/v1/auth/login", content=b"{").status_code == 400
    assert HTTP.post(f"{panel}/v1/auth/login", json={"email": "x"}).status_code == 422
    assert HTTP.post(f"{panel}/v1/auth/login", json={"email": 1, "password": 2}).status_code == 422


def forge(
    secret: str, installation: str, *, drop: tuple[str, ...] = (), **overrides: object
) -> str:
    now = dt.datetime.now(dt.UTC)
    claims: dict[str, object] = {
        "sub": "1",
        "role": "owner",
        "iss": issuer(installation),
        "aud": audience(installation),
        "jti": "forged",
        "iat": now,
        "exp": now + dt.timedelta(minutes=5),
    }
    claims.update(overrides)
    for name in drop:
        del claims[name]
    return jwt.encode(claims, secret, algorithm="HS256")


# Tokens are built inside the test (their expiry counts from now), never at collection.
JWT = SECRETS["JWT_SECRET"]


@pytest.mark.parametrize(
    ("make_token", "slug"),
    [
        (lambda here: forge("some-other-secret-of-thirty-two-bytes!!", here), "invalid-token"),
        (
            lambda here: forge(JWT, here, exp=dt.datetime(2020, 1, 1, tzinfo=dt.UTC)),
            "token-expired",
        ),
        (lambda here: forge(JWT, here, iss="someone-else"), "invalid-token"),
        (lambda here: forge(JWT, here, drop=("aud",)), "invalid-token"),
        (lambda here: forge(JWT, here, aud="billing"), "invalid-token"),
        (lambda here: forge(JWT, here, drop=("jti",)), "invalid-token"),
        (lambda here: forge(JWT, here, drop=("iat",)), "invalid-token"),
        # Signed with our key, yet lasting 30 years, or issued an hour from now.
        (
            lambda here: forge(
                JWT, here, exp=dt.datetime.now(dt.UTC) + dt.timedelta(days=365 * 30)
            ),
            "invalid-token",
        ),
        (
            lambda here: forge(JWT, here, iat=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)),
            "invalid-token",
        ),
        # Another installation sharing our secret by mistake: its tokens are not ours.
        (lambda here: forge(JWT, str(uuid.uuid4())), "invalid-token"),
        # Correctly signed, yet naming no member, or not a number.
        (lambda here: forge(JWT, here, sub="987654"), "invalid-token"),
        (lambda here: forge(JWT, here, sub="owner"), "invalid-token"),
        (lambda here: forge(JWT, here, sub="9" * 40), "invalid-token"),
        (lambda here: forge(JWT, here, sub=7), "invalid-token"),
        (lambda here: "not.a.jwt", "invalid-token"),
        (
            lambda here: jwt.encode({"sub": "1", "iss": issuer(here)}, "", algorithm="none"),
            "invalid-token",
        ),
    ],
)
def test_me__forged_expired_or_malformed_tokens_401(
    panel: str, installation: str, make_token: Callable[[str], str], slug: str
) -> None:
    token = make_token(installation)
    response = HTTP.get(f"{panel}/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401
    assert response.json()["type"] == f"/problems/{slug}"


def test_me__a_token_forged_as_we_issue_them_opens_me(panel: str, installation: str) -> None:
    # The forgeries above differ from this one in the one claim each names.
    token = forge(JWT, installation)
    assert HTTP.get(f"{panel}/v1/me", headers={"Authorization": f"Bearer {token}"}).is_success


def test_me__without_credentials_401(panel: str) -> None:
    response = HTTP.get(f"{panel}/v1/me")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("length", [73, 200, 1024])
def test_login__password_beyond_bcrypts_72_bytes_is_401_not_500(panel: str, length: int) -> None:
    # Starts with the real password: bcrypt would have read only its first 72 bytes.
    response = login(panel, "owner@example.com", (PASSWORD + "x" * length)[:length])
    assert response.status_code == 401
    assert response.json()["type"] == "/problems/bad-credentials"


def test_login__password_past_any_sane_length_is_422(panel: str) -> None:
    response = login(panel, "owner@example.com", "p" * 2000)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"


def test_login__access_token_lasts_fifteen_minutes_for_this_installation(
    panel: str, installation: str
) -> None:
    answer = login(panel, "owner@example.com", PASSWORD).json()
    assert answer["expires_in"] == 900
    claims = jwt.decode(
        answer["access_token"],
        SECRETS["JWT_SECRET"],
        algorithms=["HS256"],
        audience=f"gatehouse-panel:{installation}",
        issuer=f"gatehouse:{installation}",
    )
    assert claims["exp"] - claims["iat"] == 900
    assert len(claims["jti"]) == 32


@pytest.mark.parametrize(
    "email", ["owner\u0000@example.com", "a\nb@example.com", "x" * 300 + "@example.com", ""]
)
def test_login__unstorable_or_oversized_email_is_422(panel: str, email: str) -> None:
    response = login(panel, email, PASSWORD)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"


def test_login__eleventh_failure_for_an_account_from_one_address_is_429_with_retry_after(
    panel: str,
) -> None:
    for _ in range(10):
        assert login(panel, "owner@example.com", "wrong password").status_code == 401
    throttled = login(panel, "owner@example.com", PASSWORD)
    assert throttled.status_code == 429
    assert throttled.json()["type"] == "/problems/too-many-requests"
    assert 1 <= int(throttled.headers["retry-after"]) <= 900


def test_login__one_address_across_accounts_is_throttled_too(panel: str) -> None:
    for n in range(ADDRESS_LIMIT):
        assert login(panel, f"nobody{n}@example.com", "wrong password").status_code == 401
    assert login(panel, "owner@example.com", PASSWORD).status_code == 429


def test_login__success_clears_the_accounts_count(panel: str) -> None:
    for _ in range(9):
        login(panel, "owner@example.com", "wrong password")
    assert login(panel, "owner@example.com", PASSWORD).status_code == 200
    # The count starts again: nine more failures still leave room for the right password.
    for _ in range(9):
        login(panel, "owner@example.com", "wrong password")
    assert login(panel, "owner@example.com", PASSWORD).status_code == 200


def test_login__behind_a_trusted_proxy_the_forwarded_address_counts(database_url: str) -> None:
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, TRUSTED_PROXIES="127.0.0.1/32")
    with serve_in_thread(create_app(settings)) as url:

        def from_address(address: str, email: str, password: str) -> httpx.Response:
            return HTTP.post(
                f"{url}/v1/auth/login",
                json={"email": email, "password": password},
                # A client's own claim first, then what the proxy saw.
                headers={"X-Forwarded-For": f"198.51.100.1, {address}"},
            )

        for n in range(ADDRESS_LIMIT):
            assert from_address("203.0.113.5", f"x{n}@example.com", "wrong").status_code == 401
        assert from_address("203.0.113.5", "owner@example.com", PASSWORD).status_code == 429
        # Another client behind the same proxy is not held back.
        assert from_address("203.0.113.6", "owner@example.com", PASSWORD).status_code == 200


def test_login__without_trusted_proxies_a_forwarded_address_is_not_believed(panel: str) -> None:
    """Each failure claims another address; none is believed, even from 127.0.0.1 (uvicorn's
    own X-Forwarded-For handling would have believed it), so the one peer is throttled."""
    for n in range(ADDRESS_LIMIT):
        answer = HTTP.post(
            f"{panel}/v1/auth/login",
            json={"email": f"nobody{n}@example.com", "password": "wrong password"},
            headers={"X-Forwarded-For": f"203.0.113.{n + 1}"},
        )
        assert answer.status_code == 401
    assert login(panel, "owner@example.com", PASSWORD).status_code == 429


def password_checks(panel: str) -> float:
    text = HTTP.get(f"{panel}/metrics").text
    line = next(x for x in text.splitlines() if x.startswith("panel_password_checks_total "))
    return float(line.split()[1])


@pytest.mark.parametrize(
    ("email", "password"),
    [
        ("owner@example.com", PASSWORD),
        ("owner@example.com", "wrong password"),
        ("nobody@example.com", "wrong password"),
        ("owner@example.com", "x" * 100),
    ],
    ids=["right", "wrong password", "unknown email", "over 72 bytes"],
)
def test_login__exactly_one_bcrypt_check_whatever_the_email(
    panel: str, email: str, password: str
) -> None:
    before = password_checks(panel)
    login(panel, email, password)
    assert password_checks(panel) - before == 1


@pytest.fixture
def behind_proxy(database_url: str) -> Iterator[str]:
    """A panel behind a trusted proxy on 127.0.0.1, so each call can come from any address."""
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, TRUSTED_PROXIES="127.0.0.1/32")
    with serve_in_thread(create_app(settings)) as url:
        yield url


def sign_in_from(
    url: str, address: str, password: str, email: str = "owner@example.com", device: str = ""
) -> httpx.Response:
    headers = {"X-Forwarded-For": address}
    if device:
        headers["Cookie"] = f"{DEVICE_COOKIE}={device}"
    return HTTP.post(
        f"{url}/v1/auth/login", json={"email": email, "password": password}, headers=headers
    )


def device_cookie(response: httpx.Response) -> str:
    """The device cookie a sign-in set: a year, only for the sign-in route, never to scripts."""
    (header,) = [h for h in response.headers.get_list("set-cookie") if h.startswith(DEVICE_COOKIE)]
    attributes = [a.strip().lower() for a in header.split(";")]
    assert {"httponly", "secure", "samesite=strict", "path=/v1/auth/login"} <= set(attributes)
    assert f"max-age={365 * 24 * 3600}" in attributes
    return header.split(";")[0].split("=", 1)[1]


def test_login__a_strangers_hundred_guesses_keep_neither_the_owner_elsewhere_nor_their_browser_out(
    behind_proxy: str,
) -> None:
    url = behind_proxy
    known = device_cookie(sign_in_from(url, "198.51.100.7", PASSWORD))
    answers = [sign_in_from(url, "203.0.113.5", "wrong password").status_code for _ in range(100)]
    assert answers[:10] == [401] * 10
    assert set(answers[10:]) == {429}
    # The stranger's own address stays throttled, even with the right password.
    assert sign_in_from(url, "203.0.113.5", PASSWORD).status_code == 429
    # The owner from another address, and from their known browser on the stranger's address.
    assert sign_in_from(url, "198.51.100.8", PASSWORD).status_code == 200
    assert sign_in_from(url, "203.0.113.5", PASSWORD, device=known).status_code == 200
    # A cookie forged from the known one, or given for another account, is no device of ours.
    member, nonce, signature = known.split(".")
    forged = f"{member}.{nonce[::-1]}.{signature}"
    assert sign_in_from(url, "203.0.113.5", PASSWORD, device=forged).status_code == 429


def test_login__guesses_spread_over_many_addresses_stop_strangers_but_not_a_known_browser(
    behind_proxy: str,
) -> None:
    url = behind_proxy
    known = device_cookie(sign_in_from(url, "198.51.100.7", PASSWORD))
    limit = SIGN_IN_LIMITS.account
    for n in range(limit):
        address = f"203.0.{n // 5}.{n % 5 + 1}"  # five guesses an address: no address's limit
        assert sign_in_from(url, address, "wrong password").status_code == 401
    assert sign_in_from(url, "198.51.100.9", PASSWORD).status_code == 429
    assert sign_in_from(url, "198.51.100.9", PASSWORD, device=known).status_code == 200


def test_login__a_known_browser_is_throttled_by_its_own_failures(behind_proxy: str) -> None:
    url = behind_proxy
    known = device_cookie(sign_in_from(url, "198.51.100.7", PASSWORD))
    for _ in range(SIGN_IN_LIMITS.device):
        assert sign_in_from(url, "198.51.100.7", "typo", device=known).status_code == 401
    assert sign_in_from(url, "198.51.100.7", PASSWORD, device=known).status_code == 429
    # Its failures were its own: the same address without the cookie is not held back.
    assert sign_in_from(url, "198.51.100.7", PASSWORD).status_code == 200
