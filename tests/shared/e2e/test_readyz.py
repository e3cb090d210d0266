"""/readyz follows the database: 503 while PostgreSQL is down, 200 again when it returns."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from shared import migrate
from shared.testing import start_embedded, with_database
from tests.conftest import HTTP, ServiceProcess, service_env


def wait_status(url: str, wanted: int, timeout: float) -> float:
    started = time.monotonic()
    last: int | None = None
    while time.monotonic() - started < timeout:
        try:
            last = HTTP.get(url, timeout=5).status_code
        except httpx.TransportError:
            last = None
        if last == wanted:
            return time.monotonic() - started
        time.sleep(0.2)
    raise AssertionError(f"{url} answered {last}, not {wanted}, within {timeout} s")


def test_readyz__turns_503_without_database_and_recovers(
    start_service: Callable[..., ServiceProcess],
) -> None:
    pg, admin_url = start_embedded()
    try:
        url = pg.ensure_database(int(admin_url.rsplit(":", 1)[1].split("/")[0]), "gatehouse")
        migrate.apply(url)
        service = start_service("billing", env=service_env(url))
        ready = f"{service.url}/readyz"
        response = HTTP.get(ready, timeout=5)
        assert response.status_code == 200
        assert response.json()["migration"] == migrate.latest_version(migrate.default_dir())

        pg.stop()
        wait_status(ready, 503, timeout=20)
        body = HTTP.get(ready, timeout=5)
        assert body.headers["content-type"] == "application/problem+json"
        assert body.json()["type"] == "/problems/not-ready"
        # The process itself stays up.
        assert HTTP.get(f"{service.url}/healthz", timeout=5).status_code == 200

        pg.start()
        wait_status(ready, 200, timeout=30)
        assert service.proc.poll() is None
    finally:
        pg.destroy()


def test_readyz__503_when_migrations_are_missing(
    start_service: Callable[..., ServiceProcess], empty_database_url: str
) -> None:
    service = start_service("billing", env=service_env(empty_database_url))
    response = HTTP.get(f"{service.url}/readyz", timeout=5)
    assert response.status_code == 503
    assert "migrations" in response.json()["detail"]
    migrate.apply(empty_database_url)
    assert HTTP.get(f"{service.url}/readyz", timeout=5).status_code == 200


def test_with_database__replaces_only_the_name() -> None:
    assert (
        with_database("postgresql://u:p@h:5/old?sslmode=disable", "new")
        == "postgresql://u:p@h:5/new?sslmode=disable"
    )
