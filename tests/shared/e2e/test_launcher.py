"""`make run`'s launcher as a real process: everything up, then SIGTERM stops everything."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from shared.testing import free_port
from simulators.launcher import CHILDREN
from tests.conftest import HTTP, ROOT, wait_until


def launcher_env(data_dir: Path, ports: dict[str, int]) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "PORT"} and not key.endswith("_TOKEN")
    }
    env["GATEHOUSE_DATA_DIR"] = str(data_dir)
    env["LOG_LEVEL"] = "INFO"
    for child in CHILDREN:
        env[child.port_variable] = str(ports[child.name])
    env["POSTGRES_PORT"] = str(free_port())
    # The demo month takes most of a minute; the tests that want it ask for a small one.
    env["DEMO_MONTH"] = "0"
    return env


def start_launcher(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "simulators.launcher"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,
        )


def wait_all_ready(
    ports: dict[str, int], proc: subprocess.Popen[bytes], log: Path, since: int = 0
) -> None:
    """Every service ready and the banner printed (after `since` characters of the log)."""
    deadline = time.monotonic() + 120
    waiting = dict(ports)
    while waiting and time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        for name, port in list(waiting.items()):
            try:
                if HTTP.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    del waiting[name]
            except httpx.TransportError:
                pass
        time.sleep(0.2)
    assert not waiting, f"not ready: {waiting}\n{log.read_text()}"
    # The banner comes after the health checks.
    while "Gatehouse is running" not in log.read_text()[since:] and time.monotonic() < deadline:
        time.sleep(0.1)


def postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "pg" / "postmaster.pid").read_text().splitlines()[0])


def gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [
            pid
            for pid in alive
            if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        ]
        time.sleep(0.1)
    return alive


@pytest.fixture
def ports() -> dict[str, int]:
    return {child.name: free_port() for child in CHILDREN}


@pytest.mark.slow(14)
def test_launcher__sigterm_stops_every_child_and_postgres(
    tmp_path: Path, ports: dict[str, int]
) -> None:
    data_dir = tmp_path / "data"
    log = tmp_path / "launcher.log"
    proc = start_launcher(launcher_env(data_dir, ports), log)
    try:
        wait_all_ready(ports, proc, log)
        output = log.read_text()
        for port in ports.values():
            assert f"http://127.0.0.1:{port}" in output
        assert "owner@example.com" in output
        # The services' lines go to a file each, not between the launcher's own.
        assert '"process": "billing"' in (data_dir / "logs" / "billing.log").read_text()
        assert '"process": "billing"' not in output
        assert f"Logs: one file per service in {data_dir / 'logs'}" in output
        assert re.search(r"Up in \d+ s", output)
        # The demo bot answers through the simulated Telegram.
        bot = re.search(r"Telegram id (\d+)", output)
        assert bot is not None
        sim = f"http://127.0.0.1:{ports['simtelegram']}"
        HTTP.post(
            f"{sim}/_sim/messages",
            json={"bot_id": int(bot.group(1)), "user_id": 1, "text": "/start"},
        ).raise_for_status()
        wait_until(
            lambda: bool(HTTP.get(f"{sim}/_sim/sent", params={"bot_id": bot.group(1)}).json()),
            30,
            "the demo bot's answer to /start",
        )
        children = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        # Every service, and the sweep every minute.
        commands = [" ".join(psutil.Process(pid).cmdline()) for pid in children]
        assert len(children) >= len(CHILDREN) + 1
        assert any("billing sweep --every 60" in command for command in commands)
        pg_pid = postmaster_pid(data_dir)

        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        elapsed = time.monotonic() - started
        assert gone([*children, pg_pid], timeout=2) == []
        assert elapsed < 10, f"stopping took {elapsed:.1f} s"
        for port in ports.values():
            with pytest.raises(httpx.TransportError):
                HTTP.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.slow(17)
def test_launcher__killed_launcher_leaves_postgres_the_next_one_reuses_and_ctrl_c_stops_all(
    tmp_path: Path, ports: dict[str, int]
) -> None:
    data_dir = tmp_path / "data"
    log = tmp_path / "launcher.log"
    env = launcher_env(data_dir, ports)
    # The services' lines here, with the launcher's, to see that stopping warns of nothing.
    env["GATEHOUSE_LOGS"] = "terminal"
    first = start_launcher(env, log)
    second: subprocess.Popen[bytes] | None = None
    try:
        wait_all_ready(ports, first, log)
        children = [p.pid for p in psutil.Process(first.pid).children(recursive=True)]
        pg_pid = postmaster_pid(data_dir)
        secrets_before = (data_dir / "dev-secrets.json").read_text()

        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        # The services follow their launcher; the database is left running.
        assert gone(children, timeout=15) == []
        assert psutil.pid_exists(pg_pid)

        second = start_launcher(env, log)
        wait_all_ready(ports, second, log, since=len(log.read_text()))
        assert "reusing PostgreSQL already running" in log.read_text()
        assert postmaster_pid(data_dir) == pg_pid
        assert (data_dir / "dev-secrets.json").read_text() == secrets_before
        assert "database already has data; not seeding" in log.read_text()

        sim = f"http://127.0.0.1:{ports['simtelegram']}"
        # The demo bot's long poll is in flight, as it is whenever make run idles.
        wait_until(
            lambda: HTTP.get(f"{sim}/_sim/inflight").json().get("getupdates", 0) >= 1,
            20,
            "the demo bot's long poll",
        )
        before = len(log.read_text())
        # What a terminal's Ctrl-C does: SIGINT to the whole foreground process group.
        os.killpg(second.pid, signal.SIGINT)
        assert second.wait(timeout=20) == 0
        assert gone([pg_pid], timeout=2) == []
        stopping = log.read_text()[before:]
        # The bots stop before the simulated Telegram they poll: nothing to warn about.
        assert '"level": "WARNING"' not in stopping, stopping
        assert '"level": "ERROR"' not in stopping, stopping
        assert "Traceback" not in stopping
        assert "CancelledError" not in stopping
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.slow(21)
def test_launcher__a_restart_in_the_middle_of_a_conversation_loses_nothing(
    tmp_path: Path, ports: dict[str, int]
) -> None:
    """make run, 40 messages, Ctrl-C, make run again: the next message is answered, and the
    simulated Telegram numbers updates on from where it stopped."""
    data_dir = tmp_path / "data"
    log = tmp_path / "launcher.log"
    env = launcher_env(data_dir, ports)
    sim = f"http://127.0.0.1:{ports['simtelegram']}"
    first = start_launcher(env, log)
    second: subprocess.Popen[bytes] | None = None
    people = range(201, 221)

    def answered(person: int) -> int:
        messages = HTTP.get(f"{sim}/_sim/chats/{person}/messages").json()
        return sum(1 for m in messages if m["from"]["is_bot"])

    try:
        wait_all_ready(ports, first, log)
        bot = re.search(r"Telegram id (\d+)", log.read_text())
        assert bot is not None
        # Two messages from each of 20 people: within Telegram's per-chat burst.
        batch = [
            {"bot_id": int(bot.group(1)), "user_id": person, "text": text}
            for person in people
            for text in ("/start", "hello")
        ]
        ids = HTTP.post(f"{sim}/_sim/messages", json={"messages": batch}).json()["update_ids"]
        assert len(ids) == 40
        wait_until(lambda: all(answered(p) == 2 for p in people), 60, "40 answers")
        os.killpg(first.pid, signal.SIGINT)
        assert first.wait(timeout=30) == 0

        second = start_launcher(env, log)
        wait_all_ready(ports, second, log, since=len(log.read_text()))
        after = HTTP.post(
            f"{sim}/_sim/messages",
            json={"bot_id": int(bot.group(1)), "user_id": 201, "text": "/start"},
        ).json()
        assert after["update_id"] == max(ids) + 1
        wait_until(lambda: answered(201) == 3, 30, "the answer after the restart")
        assert all(answered(p) == 2 for p in people if p != 201)
        os.killpg(second.pid, signal.SIGINT)
        assert second.wait(timeout=30) == 0
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
