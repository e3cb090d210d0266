"""The system under load, started from nothing: a throwaway PostgreSQL, the simulated Telegram,
botedge's api and workers, and panel-api, each its own process on loopback. Also reads how
much CPU each of them used, from /proc."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import httpx
import psycopg
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from shared import migrate  # noqa: E402
from shared.embedded_pg import EmbeddedPostgres, free_port  # noqa: E402
from shared.testing import start_embedded, with_database  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
OWNER_EMAIL = "owner@example.com"
OWNER_PASSWORD = "load-test-owner-password"  # noqa: S105 - a throwaway database


@dataclass
class Process:
    name: str
    proc: subprocess.Popen[bytes]
    url: str
    log: BinaryIO
    # What started it, to start it again after a kill (`Stack.relaunch`).
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid)


@dataclass
class Stack:
    database_url: str
    env: dict[str, str]
    # The throwaway server, to stop and start under load; None on a database given to us.
    pg: EmbeddedPostgres | None
    processes: list[Process] = field(default_factory=list)

    @property
    def postmaster(self) -> int | None:
        if self.pg is None:
            return None
        try:
            return int((self.pg.data_dir / "postmaster.pid").read_text().split()[0])
        except FileNotFoundError:  # stopped
            return None

    def get(self, name: str) -> Process:
        return next(p for p in self.processes if p.name == name)

    def workers(self) -> list[Process]:
        return [p for p in self.processes if p.name.startswith("worker")]

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far: each process, PostgreSQL (all of its processes) and this one."""
        used = {p.name: p.cpu() for p in self.processes}
        if self.postmaster is not None:
            used["postgresql"] = postgres_cpu(self.postmaster)
        times = os.times()
        used["generator"] = times.user + times.system
        return used

    def start(
        self, name: str, module: str, *args: str, port: int | None = None, **env: str
    ) -> Process:
        port = port or free_port()
        log = open(self.env["LOADTEST_LOGS"] + f"/{name}.log", "wb")
        argv = [sys.executable, "-m", module, *args]
        process_env = {**self.env, **env, "PORT": str(port)}
        proc = subprocess.Popen(argv, env=process_env, stdout=log, stderr=subprocess.STDOUT)
        process = Process(name, proc, f"http://127.0.0.1:{port}", log, argv, process_env)
        self.processes.append(process)
        self._wait_healthy(process)
        return process

    def relaunch(self, process: Process) -> None:
        """Start a process that has exited again, as it was started: a supervisor's restart."""
        process.proc.wait()
        process.proc = subprocess.Popen(
            process.argv, env=process.env, stdout=process.log, stderr=subprocess.STDOUT
        )
        self._wait_healthy(process)

    def _wait_healthy(self, process: Process) -> None:
        name, proc, log = process.name, process.proc, process.log
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{process.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if proc.poll() is not None:
                raise SystemExit(f"{name} exited with {proc.returncode}; see {log.name}")
            time.sleep(0.1)
        raise SystemExit(f"{name} did not start; see {log.name}")

    def stop(self) -> None:
        for process in self.processes:
            if process.proc.poll() is None:
                process.proc.terminate()
        for process in self.processes:
            try:
                process.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.proc.kill()
                process.proc.wait()
            process.log.close()


@contextmanager
def database(settings: dict[str, str]) -> Iterator[tuple[str, EmbeddedPostgres | None]]:
    """A fresh migrated database and its throwaway server (None on BENCH_DATABASE_URL's)."""
    pg = None
    admin = os.environ.get("BENCH_DATABASE_URL")
    if not admin:
        pg, admin = start_embedded(settings)
    name = f"load_{os.getpid()}_{int(time.time())}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = with_database(admin, name)
    try:
        migrate.apply(url)
        yield url, pg
    finally:
        if pg is not None:
            pg.destroy()
            pg.data_dir.parent.rmdir()
        else:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextmanager
def stack(
    *,
    workers: int,
    telegram_ms: float,
    connect_ms: float = 0.0,
    worker_env: dict[str, str] | None = None,
    sim_env: dict[str, str] | None = None,
    database_url: str | None = None,
    billing: bool = False,
    env: dict[str, str] | None = None,
    postgres: dict[str, str] | None = None,
) -> Iterator[Stack]:
    """Everything up, panel-api's owner seeded; stopped (and PostgreSQL removed) on exit.
    `database_url`: a migrated database to use instead of a throwaway server (its CPU is then
    not measured). `billing`: billing too, before botedge, which asks it. `env`: more settings
    for every process. `postgres`: more settings for the throwaway server."""
    with ExitStack() as exits:
        if database_url is None:
            url, pg = exits.enter_context(database({"max_connections": "300", **(postgres or {})}))
        else:
            url, pg = database_url, None
        logs = exits.enter_context(tempfile.TemporaryDirectory(prefix="gatehouse-load-"))
        settings = {
            **{k: v for k, v in os.environ.items() if not k.startswith("PORT")},
            "DATABASE_URL": url,
            "LOG_LEVEL": "WARNING",
            "LOADTEST_LOGS": logs,
            "SERVICE_TOKEN": "load-service-token-0123456789",
            "JWT_SECRET": "load-jwt-secret-0123456789abcdef0123456789",
            "SWEEP_TOKEN": "load-sweep-token-0123456789",
            "BOT_TOKEN_KEY": Fernet.generate_key().decode(),
            "SIM_DELAY_MS": str(telegram_ms),
            "SIM_CONNECT_DELAY_MS": str(connect_ms),
            "DEMO_OWNER_PASSWORD": OWNER_PASSWORD,
            **(env or {}),
        }
        running = Stack(url, settings, pg)
        exits.callback(running.stop)
        sim = running.start("telegram", "simulators.telegram", **(sim_env or {}))
        running.env["TELEGRAM_API_BASE"] = sim.url
        if billing:
            running.env["BILLING_URL"] = running.start("billing", "billing").url
        api_port = free_port()
        # Where Telegram delivers the bots' updates: the api itself.
        running.env["PUBLIC_BASE_URL"] = f"http://127.0.0.1:{api_port}"
        api = running.start("botedge-api", "botedge", "--role", "api", port=api_port)
        for n in range(workers):
            running.start(f"worker-{n + 1}", "botedge", "--role", "worker", **(worker_env or {}))
        running.env["BOTEDGE_URL"] = api.url
        seeded = subprocess.run(
            [sys.executable, "-m", "panel_api", "seed"],
            env=running.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if seeded.returncode != 0:
            raise SystemExit(f"seeding the owner failed: {seeded.stderr[-500:]}")
        running.start("panel-api", "panel_api")
        yield running


def add_bot(env: dict[str, str], token: str, mode: str) -> None:
    """A bot added as an owner would (`python -m botedge add-bot`), in `polling` or `webhook`
    mode."""
    added = subprocess.run(
        [sys.executable, "-m", "botedge", "add-bot", "--mode", mode],
        env={**env, "BOT_TOKEN": token},
        capture_output=True,
        text=True,
        check=False,
    )
    if added.returncode != 0:
        raise SystemExit(f"add-bot failed: {added.stderr[-500:]}")


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    # The command name is in parentheses and may hold spaces: split after it.
    return text[text.rindex(")") + 2 :].split()


def cpu_seconds(pid: int, *, children: bool = False) -> float:
    try:
        fields = _stat(pid)
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    # utime, stime, cutime, cstime are fields 14-17 of stat; 3 fields precede them here by 11.
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / CLOCK_TICKS


def postgres_cpu(postmaster: int) -> float:
    """The postmaster, its live children, and the children it has reaped."""
    total = cpu_seconds(postmaster, children=True)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if int(_stat(int(entry.name))[1]) == postmaster:
                total += cpu_seconds(int(entry.name))
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
    return total


@dataclass(frozen=True)
class Machine:
    """The machine as a scenario starts: busy or not, and how fast. This machine's speed
    drifts (the same code took 25% more CPU an update an hour later), so a figure is compared
    with another only beside these."""

    load: tuple[float, float, float]
    idle_percent: float
    loop_ms: float

    def describe(self) -> str:
        return (
            f"load average {self.load[0]:.2f} / {self.load[1]:.2f} / {self.load[2]:.2f},"
            f" {self.idle_percent:.0f}% of the CPU idle over the 2 s before, a fixed Python loop"
            f" (a million additions) {self.loop_ms:.0f} ms"
        )


def machine_now(window: float = 2.0) -> Machine:
    before = _idle_and_total()
    # A measuring window, not a wait for something.
    time.sleep(window)
    after = _idle_and_total()
    total = after[1] - before[1]
    idle = 100.0 * (after[0] - before[0]) / total if total else 100.0
    return Machine(os.getloadavg(), idle, min(_loop_ms() for _ in range(3)))


def _idle_and_total() -> tuple[int, int]:
    """Idle (with I/O wait) and all CPU ticks since boot, over every core (/proc/stat)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return ticks[3] + ticks[4], sum(ticks)


def _loop_ms() -> float:
    started = time.perf_counter()
    total = 0
    for n in range(1_000_000):
        total += n
    return (time.perf_counter() - started) * 1000
