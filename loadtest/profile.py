"""Where the CPU goes under load: py-spy samples the stack's Python processes, and
pg_stat_statements counts PostgreSQL's statements, over the same measured window.

`python -m loadtest reference-1 --profile` adds both to the report: the functions with the
most own time in each process, and each statement's calls, rows and time per update.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
# For the embedded server `stack` starts: what pg_stat_statements needs loaded at start.
POSTGRES_SETTINGS = {"shared_preload_libraries": "pg_stat_statements"}
RATE = 100  # samples a second
TOP = 12
# "function (path:line)": own time is counted by function and file, over its lines.
FRAME = re.compile(r"^(?P<function>.*) \((?P<path>[^:()]+)(?::\d+)?\)$")


@dataclass
class Profile:
    # Process name -> (function, share of its samples), most own time first.
    functions: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    samples: dict[str, int] = field(default_factory=dict)
    # (statement, calls, rows, ms) per update, most time first.
    statements: list[tuple[str, float, float, float]] = field(default_factory=list)

    def lines(self) -> list[str]:
        out: list[str] = []
        for name, top in self.functions.items():
            out += [
                "",
                f"Own time in {name} ({self.samples[name]} samples at {RATE}/s, idle left out):",
                "",
                "| Function | Share |",
                "|---|---|",
                *(f"| `{function}` | {share:.1%} |" for function, share in top),
            ]
        if self.statements:
            out += [
                "",
                "PostgreSQL's statements per update (pg_stat_statements):",
                "",
                "| Statement | Calls | Rows | Time |",
                "|---|---|---|---|",
                *(
                    f"| `{text}` | {calls:.2f} | {rows:.2f} | {ms:.3f} ms |"
                    for text, calls, rows, ms in self.statements
                ),
            ]
        return out


def own_time_in(path: Path) -> tuple[list[tuple[str, float]], int]:
    """own_time of the file py-spy wrote, whose frames may hold bytes that are not UTF-8 (a
    native frame's name, a string cut by the sampler)."""
    return own_time(path.read_bytes().decode(errors="replace"))


def own_time(raw: str, top: int = TOP) -> tuple[list[tuple[str, float]], int]:
    """py-spy's raw (collapsed) output: each line a stack, `;`-separated, and its count. The
    last frame of a stack is where the time was spent."""
    own: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        leaf = stack.rsplit(";", 1)[-1]
        match = FRAME.match(leaf)
        key = f"{match['function']} ({_short(match['path'])})" if match else leaf
        own[key] += int(count)
    total = sum(own.values())
    return [(k, n / total) for k, n in own.most_common(top)], total


def _short(path: str) -> str:
    """A file as the report names it: from its package, or from the repository's root."""
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1]
    if "/lib/python3" in path:
        return path.split("/lib/", 1)[1].split("/", 1)[1]
    root = f"{ROOT}/"
    return path.removeprefix(root)


def reset_statements(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute("SELECT pg_stat_statements_reset()")


def statements(
    database_url: str, updates: int, top: int = 15
) -> list[tuple[str, float, float, float]]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT s.query, s.calls, s.rows, s.total_exec_time"
            "  FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid"
            " WHERE d.datname = current_database() AND s.query NOT LIKE '%%pg_stat_statements%%'"
            " ORDER BY s.total_exec_time DESC LIMIT %s",
            (top,),
        ).fetchall()
    per = max(1, updates)
    return [
        (" ".join(str(q).split())[:140], calls / per, n / per, ms / per) for q, calls, n, ms in rows
    ]


@contextmanager
def sampled(
    pids: dict[str, int], directory: Path, seconds: float, profile: Profile
) -> Iterator[Profile]:
    """py-spy on each process for `seconds`; `profile` is filled in when the block ends."""
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if spy is None:
        raise SystemExit("--profile needs py-spy (make loadtest installs it)")
    directory.mkdir(parents=True, exist_ok=True)
    running = {
        name: subprocess.Popen(
            [
                spy,
                "record",
                "--pid",
                str(pid),
                "--rate",
                str(RATE),
                "--duration",
                str(max(1, int(seconds))),
                "--format",
                "raw",
                "--nonblocking",
                "--output",
                str(directory / f"{name}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, pid in pids.items()
    }
    try:
        yield profile
    finally:
        for name, proc in running.items():
            proc.wait(timeout=seconds + 60)
            path = directory / f"{name}.txt"
            if path.exists():
                profile.functions[name], profile.samples[name] = own_time_in(path)
