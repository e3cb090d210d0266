"""Service processes for the tests, forked from one that has already imported the services.

`python -m botedge` spends about 1.2 CPU seconds importing before it serves, and the suite
starts such processes over a hundred times on two cores. This server imports the services once
(starting no thread and no event loop), then forks a real process per request: its own pid,
environment, log file and signals, running `python -m <module>` as `runpy` does. The test side
gets a `Popen`-like handle; the exit status comes back over the request's socket when the
server reaps the child.

Run as `python -m tests.forkserver <socket path>`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import select
import selectors
import signal
import socket
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

# What every service process imports; the server holds them so that each fork starts with them.
# (Not the `__main__` modules themselves: runpy runs those afresh.)
PRELOAD = (
    "billing.app",
    "billing.settings",
    "botedge.app",
    "botedge.settings",
    "panel_api.app",
    "panel_api.settings",
    "shared.lifecycle",
    "simulators.telegram.app",
    "simulators.trongrid.app",
    "simulators.checkout.app",
)


def _run_child(request: dict[str, Any], inherited: list[socket.socket]) -> None:
    """In the forked child: become `python -m module args` with the request's environment and
    log file; never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for sock in inherited:
            sock.close()
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        os.chdir(request["cwd"])
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        # As PYTHONUNBUFFERED does: tests read a service's log while it runs.
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [request["module"], *request["args"]]
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def serve(path: str) -> None:
    for name in PRELOAD:
        __import__(name)
    # The TLS context every HTTP client of a service shares, built once here for every fork.
    __import__("shared.tls").tls.verified()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_read, wake_write = socket.socketpair()
    wake_read.setblocking(False)
    wake_write.setblocking(False)
    signal.set_wakeup_fd(wake_write.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    # The test worker that started it: when it is gone (killed, so its fixtures never ran), the
    # server and the services it forked go too, instead of living on after the run.
    worker = os.getppid()
    while True:
        if os.getppid() != worker:
            for pid in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            return
        for key, _ in selector.select(timeout=2.0):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                request = json.loads(conn.makefile("rb").readline())
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    _run_child(request, [listener, conn, wake_read, wake_write, *children.values()])
                children[pid] = conn
                conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            else:
                with contextlib.suppress(BlockingIOError):
                    while wake_read.recv(4096):
                        pass
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
                conn.close()


class Forked:
    """A forked service process, as much of `subprocess.Popen` as the tests use."""

    def __init__(
        self, server: str, module: str, args: list[str], env: dict[str, str], log: Path, cwd: Path
    ):
        self.returncode: int | None = None
        self.conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.conn.connect(server)
        request = {"module": module, "args": args, "env": env, "log": str(log), "cwd": str(cwd)}
        self.conn.sendall(json.dumps(request).encode() + b"\n")
        self.buffer = b""
        while b"\n" not in self.buffer:
            chunk = self.conn.recv(4096)
            if not chunk:
                raise RuntimeError(f"the fork server did not start {module}")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        self.pid = int(json.loads(line)["pid"])

    def _exit(self, timeout: float | None) -> int | None:
        """The exit code, once the server has reaped the process; None while it runs."""
        if self.returncode is not None:
            return self.returncode
        while True:
            readable, _, _ = select.select([self.conn], [], [], timeout)
            if not readable:
                return None
            chunk = self.conn.recv(4096)
            if not chunk:
                break
            self.buffer += chunk
        self.conn.close()
        self.returncode = int(json.loads(self.buffer)["exit"])
        return self.returncode

    def poll(self) -> int | None:
        return self._exit(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._exit(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0.0)
        return code

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


if __name__ == "__main__":
    serve(sys.argv[1])
