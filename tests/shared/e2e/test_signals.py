"""Every service drains on SIGTERM, SIGINT and SIGHUP, once, and exits 0."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.conftest import HTTP, ServiceProcess, service_env, wait_until


def wait_for_line(service: ServiceProcess, text: str, timeout: float = 10) -> None:
    wait_until(lambda: text in service.output(), timeout, f"{text!r} in the log")


@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("billing", ()),
        ("botedge", ("--role", "api")),
        ("botedge", ("--role", "worker")),
        ("panel_api", ()),
        ("simulators.telegram", ()),
        ("simulators.trongrid", ()),
    ],
)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_service__drains_on_signal_and_exits_zero(
    start_service: Callable[..., ServiceProcess],
    database_url: str,
    module: str,
    args: tuple[str, ...],
    sig: signal.Signals,
) -> None:
    service = start_service(module, *args, env=service_env(database_url))
    service.signal(sig)
    assert service.wait(timeout=15) == 0
    output = service.output()
    assert f"{sig.name} received; draining" in output
    assert "Traceback" not in output


def test_service__second_signal_does_not_start_a_second_shutdown(
    start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    service = start_service("billing", env=service_env(database_url))
    service.signal(signal.SIGINT)
    service.signal(signal.SIGINT)
    service.signal(signal.SIGTERM)
    assert service.wait(timeout=15) == 0
    output = service.output()
    assert output.count("received; draining") == 1
    assert output.count("billing stopped") == 1


def test_service__finishes_in_flight_request_before_exiting(
    start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    service = start_service("tests.shared.e2e.slow_app", env=service_env(database_url))
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(httpx.get, f"{service.url}/slow?seconds=1.5", timeout=10)
        wait_for_line(service, "slow request started")
        service.signal(signal.SIGTERM)
        response = pending.result(timeout=10)
    assert response.status_code == 200
    assert response.json() == {"finished": True}
    assert service.wait(timeout=15) == 0
    # New connections are refused once draining began.
    with pytest.raises(httpx.TransportError):
        HTTP.get(f"{service.url}/healthz", timeout=2)


def test_service__in_flight_request_cut_at_the_shutdown_deadline(
    start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    env = service_env(database_url, SHUTDOWN_TIMEOUT="1")
    service = start_service("tests.shared.e2e.slow_app", env=env)
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(httpx.get, f"{service.url}/slow?seconds=30", timeout=40)
        wait_for_line(service, "slow request started")
        started = time.monotonic()
        service.signal(signal.SIGTERM)
        assert service.wait(timeout=15) == 0
        elapsed = time.monotonic() - started
        with pytest.raises(httpx.HTTPError):
            pending.result(timeout=10).raise_for_status()
    assert elapsed < 10, f"drain took {elapsed:.1f} s with a 1 s deadline"
    # Cut by design: announced, not an error and not a 500.
    output = service.output()
    assert "request cut at the shutdown deadline" in output
    assert '"level": "ERROR"' not in output
    assert '"status": 500' not in output


def test_simulated_telegram__stops_with_a_long_poll_in_flight_and_no_error(
    start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    sim = start_service("simulators.telegram", env=service_env(database_url))
    token = "5551234:AA" + "x" * 33
    HTTP.post(f"{sim.url}/_sim/bots", json={"token": token}).raise_for_status()
    with ThreadPoolExecutor(1) as pool:
        poll = pool.submit(
            httpx.post, f"{sim.url}/bot{token}/getUpdates", json={"timeout": 30}, timeout=40
        )
        wait_until(
            lambda: HTTP.get(f"{sim.url}/_sim/inflight").json().get("getupdates", 0) >= 1,
            10,
            "the long poll",
        )
        started = time.monotonic()
        sim.signal(signal.SIGINT)
        answer = poll.result(timeout=20)
    assert sim.wait(timeout=15) == 0
    # Answered (empty) when the stop began, not cut off at the drain deadline.
    assert answer.json() == {"ok": True, "result": []}
    assert time.monotonic() - started < 10
    output = sim.output()
    assert '"level": "ERROR"' not in output
    assert "CancelledError" not in output
