"""The simulated Telegram the deploy tests' stacks call, one per test module."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from shared.testing import free_port
from tests.deploy.stack.harness import GATEWAY, TIMES, Simulator, answers, wait_until


@pytest.fixture(scope="module")
def telegram(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Simulator]:
    port = free_port()
    log = open(tmp_path_factory.mktemp("logs") / "telegram.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "simulators.telegram"],
        env={**os.environ, "HOST": "0.0.0.0", "PORT": str(port)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: answers(f"{url}/healthz"), 30, "the simulated Telegram to start")
    yield Simulator(process, url, f"http://{GATEWAY}:{port}")
    process.terminate()
    process.wait(timeout=20)
    log.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Every step of the deploy tests with its time, in the order they ran."""
    if TIMES:
        terminalreporter.section("deploy steps")
        for name, took in TIMES:
            terminalreporter.write_line(f"{took:7.1f} s  {name}")
        total = sum(took for _, took in TIMES)
        terminalreporter.write_line(f"{total:7.1f} s  in all")
