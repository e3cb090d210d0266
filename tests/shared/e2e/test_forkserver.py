"""The suite's fork server goes when the test worker that started it is killed (its fixtures
never run then), and takes the services it forked with it: no process outlives the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from shared.testing import free_port
from tests.conftest import ROOT, wait_until
from tests.forkserver import Forked

# A stand-in for a test worker: starts the fork server, says its pid, then blocks reading its
# input (which the test never closes) until it is killed.
WORKER = (
    "import subprocess, sys\n"
    "server = subprocess.Popen([sys.executable, '-m', 'tests.forkserver', sys.argv[1]],"
    " stdin=subprocess.DEVNULL)\n"
    "print(server.pid, flush=True)\n"
    "sys.stdin.read()\n"
)


def gone(pid: int) -> bool:
    """No such process, or one that has exited and waits only to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def test_fork_server__gone_with_its_forked_services_when_its_worker_is_killed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "socket"
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert worker.stdout is not None
    server = int(worker.stdout.readline())
    wait_until(path.exists, 60, "the fork server")
    env = {**os.environ, "PORT": str(free_port())}
    service = Forked(str(path), "simulators.trongrid", [], env, tmp_path / "trongrid.log", ROOT)
    assert not gone(service.pid) and not gone(server)
    worker.kill()
    worker.wait()
    worker.stdout.close()
    if worker.stdin is not None:
        worker.stdin.close()
    wait_until(lambda: gone(server) and gone(service.pid), 15, "the server and its service gone")
    service.conn.close()
