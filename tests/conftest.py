"""Fixtures shared by every test package: valid settings and real service processes."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from cryptography.fernet import Fernet

from billing.app import create_app as billing_app
from billing.settings import load as load_billing_settings
from botedge.app import create_api_app as botedge_api_app
from botedge.settings import load as load_botedge_settings
from panel_api.settings import PanelSettings
from panel_api.settings import load as load_panel_settings
from shared.db import Pool, create_pool
from shared.settings import CommonSettings, Reader
from shared.testing import free_port, serve_in_thread
from simulators.telegram.app import create_app as simtelegram_app
from simulators.telegram.state import Faults
from simulators.trongrid.app import create_app as simtrongrid_app
from tests.forkserver import Forked

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")

# Distinctive values, so a test can search every log line for them.
SECRETS = {
    "SWEEP_TOKEN": "sweep-secret-3c0f9a7d41b2e6",
    "SERVICE_TOKEN": "service-secret-9d2b7e1a06f4c8",
    "JWT_SECRET": "jwt-secret-0123456789abcdef0123456789abcdef",
    "BOT_TOKEN_KEY": Fernet.generate_key().decode(),
    "SUBGATE_WEBHOOK_SECRET": "subgate-secret-5e8a1f0c3b7d92",
    "WAYFORPAY_MERCHANT_ACCOUNT": "test_merchant",
    "WAYFORPAY_SECRET_KEY": "wayforpay-secret-7a3e9c1d5b",
    "STRIPE_WEBHOOK_SECRET": "whsec_4f1c9e7a2d8b3e6f0a5c1d9e",
}


# One client for every plain request a test makes. httpx.get() and its kin build a client per
# call, and loading the CA bundle for it costs about 40 ms of CPU, twenty times the request on
# loopback. As with those functions, no cookie is ever kept between requests.
HTTP = httpx.Client(cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])))


@pytest.fixture(scope="session", autouse=True)
def _close_http() -> Iterator[None]:
    yield
    HTTP.close()


# bcrypt's least cost: tests check that passwords work, not that they are slow to guess.
# A deployment cannot set below 10 (panel_api.passwords.MIN_ROUNDS).
TEST_BCRYPT_ROUNDS = 4


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first, longest first: with tests handed out one at a time
    (`--maxschedchunk 1` in the Makefile), each parallel worker takes the next longest, and the
    run does not end with one long test left on one worker while the others wait."""

    def seconds(item: pytest.Item) -> float:
        marker = item.get_closest_marker("slow")
        return float(marker.args[0]) if marker and marker.args else 10.0 if marker else 0.0

    items.sort(key=seconds, reverse=True)


def service_env(database_url: str, **overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PORT", "DATABASE_URL"))}
    env.update(SECRETS)
    env["DATABASE_URL"] = database_url
    env["LOG_LEVEL"] = "INFO"
    env.update(overrides)
    return env


def panel_settings(database_url: str, **overrides: str) -> PanelSettings:
    """The panel API's settings for a test: the service environment, bcrypt at its least cost."""
    settings = load_panel_settings(service_env(database_url, **overrides))
    return dataclasses.replace(settings, bcrypt_rounds=TEST_BCRYPT_ROUNDS)


@dataclass
class ServiceProcess:
    name: str
    proc: subprocess.Popen[bytes] | Forked
    url: str
    log_path: Path

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)


# Writes down a fault test's figures for docs/reliability.md (see `written_down`).
WrittenDown = Callable[..., None]


@pytest.fixture
def written_down(request: pytest.FixtureRequest) -> WrittenDown:
    """For a test `make faults` runs at full size: called once its assertions have passed, with
    what was done and the figures it counted; kept in GATEHOUSE_FAULT_RECORDS, from which
    `python -m loadtest.faults --write` makes docs/reliability.md. Elsewhere, nothing."""

    def write(title: str, fault: str, load: str, figures: dict[str, object]) -> None:
        directory = os.environ.get("GATEHOUSE_FAULT_RECORDS")
        if not directory:
            return
        record = {
            "title": title,
            "fault": fault,
            "load": load,
            "command": f"GATEHOUSE_FULL_SCALE=1 python -m pytest '{request.node.nodeid}'",
            "figures": {name: str(value) for name, value in figures.items()},
        }
        Path(directory, f"{request.node.name}.json").write_text(json.dumps(record, indent=1))

    return write


def wait_until(check: Callable[[], object], timeout: float, what: str) -> None:
    """Return once `check()` is true; fail naming `what` after `timeout` seconds. The one place
    tests wait: on a condition, looked at every 50 ms, never for a fixed time."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def wait_healthy(url: str, proc: subprocess.Popen[bytes] | Forked, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before it was healthy")
        try:
            if HTTP.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{url} not healthy after {timeout} s")


@dataclass(frozen=True)
class Served:
    """An app served over real HTTP on loopback from a thread of the test process: no process
    to start, for a test that only talks to it."""

    url: str


# Serves an ASGI app in a thread until the test ends; its base URL.
Serve = Callable[[Any], Served]


@pytest.fixture
def serve(request: pytest.FixtureRequest) -> Iterator[Serve]:
    # The test's database is made first so it is dropped last, after the services stop: a
    # service whose database went first spends its shutdown timeout reconnecting.
    for database in ("database_url", "empty_database_url"):
        if database in request.fixturenames:
            request.getfixturevalue(database)
    with ExitStack() as stack:
        yield lambda app: Served(stack.enter_context(serve_in_thread(app)))


def serve_billing(serve: Serve, database_url: str, **overrides: str) -> Served:
    """billing on this test's database, in a thread."""
    return serve(billing_app(load_billing_settings(service_env(database_url, **overrides))))


def serve_botedge_api(serve: Serve, database_url: str, **overrides: str) -> Served:
    """botedge's webhook and internal API on this test's database, in a thread."""
    env = service_env(database_url, **overrides)
    return serve(botedge_api_app(load_botedge_settings(env, "api")))


def serve_simtelegram(serve: Serve, **faults: str) -> Served:
    """A simulated Telegram of its own for this test, faults as its SIM_ variables give them."""
    return serve(simtelegram_app(Faults.from_env(faults)))


def serve_simtrongrid(serve: Serve) -> Served:
    return serve(simtrongrid_app())


@pytest.fixture(scope="session")
def fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """This test worker's fork server (see tests/forkserver.py); its socket's path."""
    path = str(tmp_path_factory.mktemp("forkserver") / "socket")
    log = Path(path).with_name("forkserver.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.forkserver", path], cwd=ROOT, stdout=log, stderr=log
    )
    try:
        wait_until(lambda: server.poll() is not None or Path(path).exists(), 60, "the fork server")
        if server.poll() is not None:
            raise RuntimeError(f"the fork server exited: {Path(log.name).read_text()}")
        yield path
    finally:
        server.kill()
        server.wait()
        log.close()


@pytest.fixture
def start_service(tmp_path: Path, fork_server: str) -> Iterator[object]:
    """Start `python -m <module>` as a real process on a free port; stopped after the test.
    It is forked from the fork server, which has the services imported already."""
    started: list[ServiceProcess] = []

    def start(
        module: str, *args: str, env: dict[str, str], wait: bool = True, port: int | None = None
    ) -> ServiceProcess:
        port = port or free_port()
        log_path = tmp_path / f"{module.replace('.', '_')}-{port}.log"
        proc = Forked(fork_server, module, list(args), {**env, "PORT": str(port)}, log_path, ROOT)
        service = ServiceProcess(module, proc, f"http://127.0.0.1:{port}", log_path)
        started.append(service)
        if wait:
            wait_healthy(service.url, proc)
        return service

    yield start
    for service in started:
        if service.proc.poll() is None:
            service.proc.kill()
            service.proc.wait()


def counted(url: str, metric: str, label: str, **fixed: str) -> dict[str, float]:
    """A counter's values by one label, among its samples with the `fixed` labels, as the
    service's /metrics shows them now; for a service in this process, compare two readings."""
    values = {}
    for line in HTTP.get(f"{url}/metrics").text.splitlines():
        if not line.startswith(metric + "{"):
            continue
        labels, value = line.rsplit(" ", 1)
        found = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if label in found and all(found.get(k) == v for k, v in fixed.items()):
            values[found[label]] = float(value)
    return values


def scans_of(plan: dict[str, Any], table: str) -> list[str]:
    """The node types that read `table` anywhere in an `EXPLAIN (FORMAT JSON)` plan."""
    found = [plan["Node Type"]] if plan.get("Relation Name") == table else []
    for child in plan.get("Plans", []):
        found.extend(scans_of(child, table))
    return found


async def gather_limited(calls: list[Awaitable[T]], limit: int = 48) -> list[T]:
    """Run awaitables with at most `limit` in flight, results in order.

    httpx's connection pool slows down quadratically with thousands of queued requests, so the
    tests bound concurrency themselves instead of queueing everything on the client.
    """
    gate = asyncio.Semaphore(limit)

    async def one(call: Awaitable[T]) -> T:
        try:
            await gate.acquire()
        except BaseException:
            # Cancelled before its turn (another call failed): close it, or it is reported as
            # never awaited in whatever test happens to be running when it is collected.
            if inspect.iscoroutine(call):
                call.close()
            raise
        try:
            return await call
        finally:
            gate.release()

    return list(await asyncio.gather(*(one(call) for call in calls)))


# Opens the service's own pool on the test's database; closed on leaving.
OpenPool = Callable[[], AbstractAsyncContextManager[Pool]]


@pytest.fixture
def open_pool(database_url: str) -> OpenPool:
    """For a test that runs a component in an event loop of its own."""

    @asynccontextmanager
    async def opened() -> AsyncIterator[Pool]:
        pool = create_pool(CommonSettings.read(Reader({"DATABASE_URL": database_url}), "test", 1))
        await pool.open(wait=True)
        try:
            yield pool
        finally:
            await pool.close()

    return opened
