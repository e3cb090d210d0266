"""A panel API in a thread with billing (and the simulated TronGrid) as real processes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg
import pytest
from tronpy.keys import to_base58check_address

from panel_api.app import create_app
from panel_api.seed import seed
from shared.testing import serve_in_thread
from tests.botedge.conftest import insert_bot
from tests.conftest import (
    HTTP,
    TEST_BCRYPT_ROUNDS,
    Serve,
    panel_settings,
    serve_billing,
    serve_simtrongrid,
)

PASSWORD = "correct horse battery"
SHOP = str(to_base58check_address(bytes([0x41]) + bytes([0x11]) * 20))


def call_as(
    token: str, method: str, url: str, body: object = None, timeout: float = 30, **headers: str
) -> httpx.Response:
    """One panel API call as the person whose access token this is."""
    return HTTP.request(
        method,
        url,
        json=body,
        headers={"Authorization": f"Bearer {token}", **headers},
        timeout=timeout,
    )


@dataclass
class Panel:
    url: str
    tokens: dict[str, str]
    bot: int
    database_url: str
    # billing behind the panel ("" without one), to ask it what botedge asks.
    billing_url: str

    def call(
        self, method: str, path: str, body: Any = None, role: str = "owner", timeout: float = 30
    ) -> httpx.Response:
        return call_as(self.tokens[role], method, f"{self.url}{path}", body, timeout)

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.database_url) as conn:
            return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]


def owner_and_viewer(url: str) -> dict[str, str]:
    """Tokens of the seeded owner and of a viewer the owner adds."""
    owner = sign_in(url, "owner@example.com", PASSWORD)
    added = HTTP.post(
        f"{url}/v1/team",
        json={"email": "v@example.com", "role": "viewer", "password": "viewer password"},
        headers={"Authorization": f"Bearer {owner}"},
    )
    assert added.status_code == 201, added.text
    return {"owner": owner, "viewer": sign_in(url, "v@example.com", "viewer password")}


def sign_in(url: str, email: str, password: str) -> str:
    answer = HTTP.post(f"{url}/v1/auth/login", json={"email": email, "password": password})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])


def start_billing(serve: Serve, database_url: str, **overrides: str) -> str:
    """billing with the simulated TronGrid (and the TRX price sources) behind it; its URL."""
    chain = serve_simtrongrid(serve)
    sources = ",".join(f"{n}={chain.url}" for n in ("coingecko", "kraken", "binance"))
    return serve_billing(
        serve, database_url, TRONGRID_URL=chain.url, TRX_RATE_SOURCES=sources, **overrides
    ).url


@pytest.fixture
def panel(serve: Serve, database_url: str) -> Iterator[Panel]:
    billing = start_billing(serve, database_url)
    bot, _, _ = insert_bot(database_url)
    assert seed(database_url, "owner@example.com", PASSWORD, TEST_BCRYPT_ROUNDS) is True
    settings = panel_settings(database_url, BILLING_URL=billing)
    with serve_in_thread(create_app(settings)) as url:
        yield Panel(url, owner_and_viewer(url), bot, database_url, billing)
