"""`make run`: the whole system on one machine.

Starts (or reuses) the embedded PostgreSQL unless DATABASE_URL is set, applies migrations, seeds
demo data into an empty database, starts every service and simulated server as its own process,
prints where to look, and on Ctrl-C or SIGTERM stops them all and the database, exiting 0.
It lives beside the simulators because it is for a development machine, never the image.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from billing.gateways import GATEWAYS
from shared import logging as jsonlog
from shared import migrate
from shared.embedded_pg import EmbeddedPostgres, EmbeddedPostgresError
from shared.settings import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    LOG_LEVELS,
    SHUTDOWN_TIMEOUT_MINIMUM,
    Reader,
    SettingsError,
)
from simulators.progress import ProgressBar

# How long a process may drain after SIGTERM before it is killed: the services' own shutdown
# deadline (SHUTDOWN_TIMEOUT) and a margin to exit.
STOP_MARGIN = 2.0
SWEEP_EVERY = 60
DEMO_BOT_USERNAME = "gatehouse_demo_bot"

log = logging.getLogger("launcher")
READY_TIMEOUT = 120.0


@dataclass(frozen=True)
class Child:
    name: str
    module: str
    args: tuple[str, ...]
    port_variable: str
    default_port: int
    # What the process is: printed beside its URL.
    what: str

    def port(self, env: dict[str, str]) -> int:
        return int(env.get(self.port_variable, self.default_port))


CHILDREN = (
    Child(
        "simtelegram",
        "simulators.telegram",
        (),
        "SIMTELEGRAM_PORT",
        8081,
        "simulated Telegram Bot API",
    ),
    Child("simtrongrid", "simulators.trongrid", (), "SIMTRONGRID_PORT", 8082, "simulated TronGrid"),
    Child("simcheckout", "simulators.checkout", (), "SIMCHECKOUT_PORT", 8083, "simulated checkout"),
    Child("billing", "billing", (), "BILLING_PORT", 8001, "billing (webhooks, sweep)"),
    Child("botedge-api", "botedge", ("--role", "api"), "BOTEDGE_PORT", 8002, "bot edge webhooks"),
    Child(
        "botedge-worker",
        "botedge",
        ("--role", "worker"),
        "BOTEDGE_WORKER_PORT",
        8012,
        "bot edge worker (health, metrics)",
    ),
    Child("panel-api", "panel_api", (), "PANEL_PORT", 8003, "owner's panel (page and API)"),
)

# Development values for the secrets, generated once per data directory and kept there so
# tokens, signed sessions and encrypted bot tokens survive a restart.
DEV_SECRETS = (
    "SWEEP_TOKEN",
    "SERVICE_TOKEN",
    "JWT_SECRET",
    "BOT_TOKEN_KEY",
    "SUBGATE_WEBHOOK_SECRET",
    "WAYFORPAY_MERCHANT_ACCOUNT",
    "WAYFORPAY_SECRET_KEY",
    "STRIPE_WEBHOOK_SECRET",
    "DEMO_OWNER_PASSWORD",
    "DEMO_BOT_TOKEN",
    "POSTGRES_PASSWORD",
)
# Used by the launcher alone, not handed to the services.
LAUNCHER_ONLY = frozenset({"POSTGRES_PASSWORD"})


def _generate(name: str) -> str:
    if name == "BOT_TOKEN_KEY":
        from cryptography.fernet import Fernet

        return Fernet.generate_key().decode()
    if name == "WAYFORPAY_MERCHANT_ACCOUNT":
        return "gatehouse_demo"
    if name == "STRIPE_WEBHOOK_SECRET":
        return "whsec_" + secrets.token_hex(24)
    if name == "DEMO_OWNER_PASSWORD":
        return "demo-" + secrets.token_urlsafe(9)
    if name == "DEMO_BOT_TOKEN":
        # Shaped like a real token; only the simulated Telegram ever sees it.
        return f"{secrets.randbelow(9 * 10**9) + 10**9}:AA{secrets.token_urlsafe(33)}"
    return secrets.token_urlsafe(32)


def dev_secrets(data_dir: Path) -> dict[str, str]:
    path = data_dir / "dev-secrets.json"
    stored: dict[str, str] = {}
    if path.exists():
        stored = json.loads(path.read_text())
    changed = False
    for name in DEV_SECRETS:
        if name not in stored:
            stored[name] = _generate(name)
            changed = True
    if changed:
        write_private(path, json.dumps(stored, indent=2))
    return stored


def write_private(path: Path, text: str) -> None:
    """Replace `path` with `text`, readable by its owner alone from the first byte on."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.unlink(missing_ok=True)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


# The repository's folder (services/simulators/simulators/launcher.py is three below it):
# `.data` is kept there, where the README says.
REPOSITORY = Path(__file__).resolve().parents[3]


def _wire(child_env: dict[str, str], ports: dict[str, int]) -> None:
    """Each service pointed at the others and at the simulators, unless the caller set it."""
    child_env.setdefault("TELEGRAM_API_BASE", f"http://127.0.0.1:{ports['simtelegram']}")
    child_env.setdefault("TRONGRID_URL", f"http://127.0.0.1:{ports['simtrongrid']}")
    # The simulated TronGrid answers the TRX rate sources' price paths too.
    chain = f"http://127.0.0.1:{ports['simtrongrid']}"
    child_env.setdefault(
        "TRX_RATE_SOURCES", ",".join(f"{n}={chain}" for n in ("coingecko", "kraken", "binance"))
    )
    child_env.setdefault("BILLING_URL", f"http://127.0.0.1:{ports['billing']}")
    # Every gateway's payment page is the simulated checkout, which signs its callbacks.
    checkout = f"http://127.0.0.1:{ports['simcheckout']}/checkout"
    for gateway in GATEWAYS:
        child_env.setdefault(
            f"{gateway.name.upper()}_PAY_URL",
            f"{checkout}/{gateway.name}/{{order_reference}}"
            "?amount={amount}&currency={currency}",
        )
    child_env.setdefault("BOTEDGE_URL", f"http://127.0.0.1:{ports['botedge-api']}")


class Launcher:
    def __init__(self, root: Path, env: dict[str, str], out: IO[str]) -> None:
        self.root = root
        self.env = env
        self.out = out
        self.data_dir = Path(env.get("GATEHOUSE_DATA_DIR", root / ".data")).resolve()
        self.pg: EmbeddedPostgres | None = None
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.stop_requested: int | None = None
        # The services' log lines: a file each in .data/logs, or this terminal when asked.
        self.logs_dir = self.data_dir / "logs"
        self.logs_here = env.get("GATEHOUSE_LOGS", "file").strip().lower() == "terminal"
        self.log_files: list[IO[bytes]] = []
        self.started = time.monotonic()
        self.demo_seconds: float | None = None

    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.stop_requested is None:
            self.stop_requested = signum

    def run(self) -> int:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        # Holds the secrets and the database: the owner's alone.
        self.data_dir.mkdir(mode=0o700, exist_ok=True)
        self.logs_dir.mkdir(exist_ok=True)
        lock = open(self.data_dir / "launcher.lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.say(f"another launcher is running with data in {self.data_dir}; stop it first")
            return 1
        try:
            return self._run()
        finally:
            self._stop_children()
            if self.pg is not None:
                log.info("stopping PostgreSQL")
                self.pg.stop(timeout=3.0)
            log.info("stopped")
            for opened in self.log_files:
                opened.close()
            lock.close()

    def _run(self) -> int:
        child_env = dict(self.env)
        generated = dev_secrets(self.data_dir)
        jsonlog.register_secrets(generated.values())
        for name, value in generated.items():
            if name not in LAUNCHER_ONLY:
                child_env.setdefault(name, value)
        database_url = self.env.get("DATABASE_URL", "").strip() or self._embedded(generated)
        if not database_url:
            return 1
        child_env["DATABASE_URL"] = database_url
        if self.stop_requested is not None:
            return 0
        if not self._migrate_and_seed(database_url, child_env):
            return 1
        ports = {child.name: child.port(self.env) for child in CHILDREN}
        _wire(child_env, ports)
        for child in CHILDREN:
            if self.stop_requested is not None:
                return 0
            self._start(child, dict(child_env, PORT=str(ports[child.name])))

        if not self._wait_healthy(ports):
            return 0 if self.stop_requested is not None else 1
        demo_bot = self._add_demo_bot(child_env)
        demo_gate = self._demo_gate(child_env) if demo_bot else None
        if demo_gate:
            self._demo_month(
                dict(child_env, PANEL_URL=f"http://127.0.0.1:{ports['panel-api']}"), demo_gate
            )
        # The sweep every minute, as compose runs it: grace, expiry and removals happen.
        self.procs["sweep"] = subprocess.Popen(  # noqa: S603 - our own module
            [sys.executable, "-m", "billing", "sweep", "--every", str(SWEEP_EVERY)],
            env=child_env,
            stdout=self._log_of("sweep"),
            stderr=subprocess.STDOUT,
            preexec_fn=_terminate_with_parent,
            process_group=0,
        )
        self._banner(ports, database_url, child_env, demo_bot, demo_gate)
        while self.stop_requested is None:
            for name, proc in self.procs.items():
                code = proc.poll()
                if code is not None:
                    self.say(f"{name} exited with status {code}; stopping everything")
                    return 1
            time.sleep(0.2)
        log.info("%s received; stopping", signal.Signals(self.stop_requested).name)
        return 0

    def _embedded(self, generated: dict[str, str]) -> str:
        """The embedded PostgreSQL started and its database made: its URL; "" when it could
        not be (said why)."""
        pg_port = self.env.get("POSTGRES_PORT", "").strip()
        if pg_port and not (pg_port.isdigit() and 0 < int(pg_port) < 65536):
            self.say(f"POSTGRES_PORT must be a port number, not {pg_port!r}")
            return ""
        self.pg = EmbeddedPostgres(
            self.data_dir / "pg",
            password=generated["POSTGRES_PASSWORD"],
            port=int(pg_port) if pg_port else None,
            settings={"max_connections": "200"},
        )
        try:
            running = self.pg.start()
            return self.pg.ensure_database(running.port, "gatehouse")
        except EmbeddedPostgresError as error:
            self.say(f"could not start the embedded PostgreSQL: {error}")
            return ""

    def _migrate_and_seed(self, database_url: str, child_env: dict[str, str]) -> bool:
        try:
            applied = migrate.apply(database_url)
        except migrate.MigrationError as error:
            self.say(f"migration error: {error}")
            return False
        log.info("migrations up to date (%d applied now)", len(applied))
        seeded = subprocess.run(
            [sys.executable, "-m", "panel_api", "seed"],
            env=child_env,
            capture_output=True,
            text=True,
            check=False,
            process_group=0,
        )
        if seeded.returncode != 0:
            self.say(f"seeding demo data failed: {seeded.stderr.strip()[-500:]}")
            return False
        # Its one line, as a log line like every other.
        log.info("%s", seeded.stdout.strip())
        return True

    def _start(self, child: Child, env: dict[str, str]) -> None:
        if child.name in ("simtelegram", "simtrongrid"):
            # A restarted demo continues where it stopped: people, chats, transactions.
            env["SIM_STATE_FILE"] = str(self.data_dir / f"{child.name}.json")
        self.procs[child.name] = subprocess.Popen(  # noqa: S603 - our own modules
            [sys.executable, "-m", child.module, *child.args],
            env=env,
            stdout=self._log_of(child.name),
            stderr=subprocess.STDOUT,
            preexec_fn=_terminate_with_parent,
            # Out of the terminal's process group: Ctrl-C reaches the launcher alone, which
            # stops the services before the simulators they talk to.
            process_group=0,
        )
        log.info("started %s (pid %d)", child.name, self.procs[child.name].pid)

    def _log_of(self, name: str) -> IO[bytes] | None:
        """Where a child writes: its file in .data/logs (appended), or this terminal."""
        if self.logs_here:
            return None
        opened = open(self.logs_dir / f"{name}.log", "ab")
        self.log_files.append(opened)
        return opened

    def _wait_healthy(self, ports: dict[str, int]) -> bool:
        deadline = time.monotonic() + READY_TIMEOUT
        waiting = set(ports)
        while waiting and time.monotonic() < deadline:
            if self.stop_requested is not None:
                return False
            for name in sorted(waiting):
                proc = self.procs[name]
                if proc.poll() is not None:
                    self.say(f"{name} exited with status {proc.returncode} while starting")
                    return False
                if _healthy(ports[name]):
                    waiting.discard(name)
            time.sleep(0.1)
        if waiting:
            self.say(f"not healthy after {READY_TIMEOUT:.0f} s: {', '.join(sorted(waiting))}")
            return False
        return True

    def _add_demo_bot(self, env: dict[str, str]) -> str | None:
        """A bot in polling mode against the simulated Telegram; its Telegram id."""
        token = env.get("DEMO_BOT_TOKEN", "")
        if not env.get("TELEGRAM_API_BASE", "").startswith("http://127.0.0.1"):
            return None
        # A username to address it by, as a real bot has (the README's scripted walk uses it).
        try:
            httpx.post(
                env["TELEGRAM_API_BASE"].rstrip("/") + "/_sim/bots",
                json={"token": token, "username": DEMO_BOT_USERNAME},
                timeout=10,
            ).raise_for_status()
        except httpx.HTTPError as error:
            log.warning("could not name the demo bot: %s", error)
        added = _demo_step(
            "add the demo bot",
            {**env, "BOT_TOKEN": token},
            "botedge",
            "add-bot",
            "--mode",
            "polling",
        )
        return None if added is None else token.split(":", 1)[0]

    def _demo_gate(self, env: dict[str, str]) -> dict[str, Any] | None:
        """The demo channels and content in the simulated Telegram; what to show of them."""
        made = _demo_step("set up the demo gate", env, "botedge.demo")
        if made is None:
            return None
        shown: dict[str, Any] = json.loads(made)
        return shown

    def _demo_month(self, env: dict[str, str], gate: dict[str, Any]) -> None:
        """A month of made-up business played through the system, into one nobody has used,
        with a bar of its progress (its own lines and the services' go to their log files)."""
        log.info("playing a month of demo activity (DEMO_MONTH=0 turns it off)")
        started = time.monotonic()
        with open(self.logs_dir / "demo-month.log", "ab") as notes:
            played = subprocess.Popen(  # noqa: S603 - our own module
                [sys.executable, "-m", "simulators.demo_month", json.dumps(gate)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                # A Ctrl-C while it runs stops the launcher after it, not the month halfway.
                process_group=0,
            )
            assert played.stderr is not None and played.stdout is not None  # noqa: S101 - piped
            bar = ProgressBar(self.out, "demo month", started)
            for line in played.stderr:
                counted = line.split()
                if len(counted) == 3 and counted[0] == b"progress":
                    bar.show(int(counted[1]), int(counted[2]))
                else:
                    notes.write(line)
            outcome = played.stdout.read().decode()
            played.wait()
        bar.end()
        self.demo_seconds = time.monotonic() - started
        if played.returncode != 0:
            log.warning("could not play the demo month; see %s", self.logs_dir / "demo-month.log")
        elif outcome.strip():
            log.info("demo month: %s", outcome.strip())

    def _banner(
        self,
        ports: dict[str, int],
        database_url: str,
        env: dict[str, str],
        demo_bot: str | None,
        demo_gate: dict[str, Any] | None = None,
    ) -> None:
        width = max(len(child.what) for child in CHILDREN)
        lines = ["", "Gatehouse is running:"]
        for child in CHILDREN:
            lines.append(f"  {child.what:<{width}}  http://127.0.0.1:{ports[child.name]}")
        lines.append(f"  {'PostgreSQL':<{width}}  {_without_password(database_url)}")
        lines += [
            "",
            f"Panel: open http://127.0.0.1:{ports['panel-api']}/ and sign in as the demo owner:",
            f"  email     {env.get('DEMO_OWNER_EMAIL', 'owner@example.com')}",
            f"  password  {env['DEMO_OWNER_PASSWORD']}",
            "",
        ]
        if demo_bot:
            lines += [
                "Walk the demo in the simulated Telegram's chat window: be anyone, talk to the",
                "demo bot, press its buttons, pay, join and leave channels:",
                f"  http://127.0.0.1:{ports['simtelegram']}/",
                "and pay the ad shop from the simulated TRON wallet:",
                f"  http://127.0.0.1:{ports['simtrongrid']}/",
                "",
                f"Demo bot: @{DEMO_BOT_USERNAME} (Telegram id {demo_bot}), polling the simulated"
                " Telegram.",
            ]
        if demo_bot and demo_gate:
            lines += [
                f"  {demo_gate['link']}  a content behind two sponsor channels",
                f"  /start pay_{demo_gate['paid_channel_id']}  the demo paid channel, 5 USD for 30"
                " days or 50 USD for a year (coupon WELCOME20: 20% off the year)",
                f"  /ads  the ad shop, paid in USDT or TRX to {demo_gate['shop']}",
                'From a script: the README\'s "Walk the demo from a script" does all three with'
                " curl.",
            ]
        lines.append("")
        lines += [
            f"Development secrets (SWEEP_TOKEN, SERVICE_TOKEN, POSTGRES_PASSWORD, ...) were "
            f"generated into {self.data_dir / 'dev-secrets.json'}; set them in the environment "
            "to override.",
            "Each service answers /healthz, /readyz and /metrics. Ctrl-C stops everything.",
            (
                "Logs: this terminal (GATEHOUSE_LOGS=terminal)."
                if self.logs_here
                else f"Logs: one file per service in {self.logs_dir} (GATEHOUSE_LOGS=terminal"
                " shows them here)."
            ),
            self._times(),
            "",
        ]
        self.say("\n".join(lines))

    def _times(self) -> str:
        """How long it took, measured: from the launcher's start, and from `make run`'s
        (which installs first) when make says when that was."""
        up = time.monotonic() - self.started
        parts = [f"Up in {up:.0f} s"]
        if self.demo_seconds is not None:
            parts.append(f"the demo month {self.demo_seconds:.0f} s of it")
        made = self.env.get("GATEHOUSE_RUN_STARTED", "").strip()
        if made.replace(".", "", 1).isdigit():
            parts.append(f"{time.time() - float(made):.0f} s since `make run` started")
        return ", ".join(parts) + "."

    def _stop_children(self) -> None:
        """The services first (the bots' pollers and senders stop talking to the simulated
        Telegram), then the simulators; each may drain for its shutdown deadline."""
        try:
            drain = Reader(self.env).seconds(
                "SHUTDOWN_TIMEOUT", DEFAULT_SHUTDOWN_TIMEOUT, minimum=SHUTDOWN_TIMEOUT_MINIMUM
            )
        except SettingsError:
            # The services refuse it too and have exited already.
            drain = DEFAULT_SHUTDOWN_TIMEOUT
        budget = drain + STOP_MARGIN
        simulators = {child.name for child in CHILDREN if child.module.startswith("simulators")}
        self._stop_stage({n: p for n, p in self.procs.items() if n not in simulators}, budget)
        self._stop_stage({n: p for n, p in self.procs.items() if n in simulators}, budget)

    def _stop_stage(self, procs: dict[str, subprocess.Popen[bytes]], budget: float) -> None:
        alive = {name: p for name, p in procs.items() if p.poll() is None}
        for proc in alive.values():
            proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + budget
        for name, proc in alive.items():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning(
                    "%s (pid %d) was still draining %.0f s after SIGTERM; killing it",
                    name,
                    proc.pid,
                    budget,
                )
                proc.kill()
                proc.wait()


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _terminate_with_parent() -> None:
    """In the child: get SIGTERM (and drain) if the launcher dies, even by SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


def _demo_step(what: str, env: dict[str, str], module: str, *args: str) -> str | None:
    """Run one demo-data command; its output, or None (logged) when it failed: the system is
    still worth bringing up without that part of the demo."""
    done = subprocess.run(  # noqa: S603 - our own module
        [sys.executable, "-m", module, *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        # A Ctrl-C while it runs stops the launcher after it, not the step halfway.
        process_group=0,
    )
    if done.returncode != 0:
        log.warning("could not %s: %s", what, done.stderr.strip()[-300:])
        return None
    return done.stdout


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def main() -> int:
    level = os.environ.get("LOG_LEVEL", "INFO").upper()
    jsonlog.configure("launcher", level if level in LOG_LEVELS else "INFO")
    return Launcher(REPOSITORY, dict(os.environ), sys.stdout).run()


if __name__ == "__main__":
    raise SystemExit(main())
