"""Apply `migrations/NNNN_name.sql` in order, each once, each in its own transaction.

`python -m shared.migrate` takes DATABASE_URL from the environment. Runners serialize on a
session advisory lock, so two started at once apply each file once. A file already applied whose
checksum changed stops the run: migrations are forward-only, a change is a new file.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import LiteralString

import psycopg

log = logging.getLogger("shared.migrate")

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
# Keyed by hashtextextended('migrate:schema', 0) as DESIGN.md asks of one-bigint locks.
_LOCK = "SELECT pg_advisory_lock(hashtextextended('migrate:schema', 0))"
_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended('migrate:schema', 0))"
_CREATE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text        NOT NULL,
    checksum   text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


class MigrationError(Exception):
    """The migrations on disk and in the database disagree, or a file failed."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path
    checksum: str

    @property
    def filename(self) -> str:
        return self.path.name


def default_dir() -> Path:
    """`migrations/` at the repository root (this file lives in shared/shared/)."""
    configured = os.environ.get("MIGRATIONS_DIR")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[2] / "migrations"


def discover(directory: Path) -> list[Migration]:
    if not directory.is_dir():
        raise MigrationError(f"migrations directory {directory} does not exist")
    found: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        match = _FILE.match(path.name)
        if match is None:
            raise MigrationError(f"{path.name}: migration files are named NNNN_name.sql")
        version = int(match.group(1))
        if version in found:
            raise MigrationError(
                f"{path.name}: version {version} also used by {found[version].filename}"
            )
        checksum = hashlib.sha256(path.read_bytes()).hexdigest()
        found[version] = Migration(version, match.group(2), path, checksum)
    return [found[v] for v in sorted(found)]


def latest_version(directory: Path) -> int:
    migrations = discover(directory)
    return migrations[-1].version if migrations else 0


def apply(database_url: str, directory: Path | None = None) -> list[Migration]:
    """Apply what is pending; returns the migrations this call applied."""
    migrations = discover(directory or default_dir())
    applied_now: list[Migration] = []
    with psycopg.connect(database_url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(_LOCK)
        try:
            conn.execute(_CREATE)
            rows = conn.execute("SELECT version, name, checksum FROM schema_migrations").fetchall()
            applied = {version: (name, checksum) for version, name, checksum in rows}
            on_disk = {m.version for m in migrations}
            for version, (name, _) in sorted(applied.items()):
                if version not in on_disk:
                    raise MigrationError(
                        f"{version:04d}_{name}.sql was applied but is missing from disk"
                    )
            for migration in migrations:
                if migration.version in applied:
                    if applied[migration.version][1] != migration.checksum:
                        raise MigrationError(
                            f"{migration.filename} was edited after it was applied "
                            "(checksum differs); add a new migration instead"
                        )
                    continue
                _apply_one(conn, migration)
                applied_now.append(migration)
        finally:
            conn.execute(_UNLOCK)
    return applied_now


def _apply_one(conn: psycopg.Connection[tuple[object, ...]], migration: Migration) -> None:
    # Trusted file from the repository, never input.
    text: LiteralString = migration.path.read_text(encoding="utf-8")
    try:
        with conn.transaction():
            conn.execute(text)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                (migration.version, migration.name, migration.checksum),
            )
    except psycopg.Error as error:
        raise MigrationError(f"{migration.filename} failed: {error}") from error
    log.info("applied migration %s", migration.filename)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.migrate", description=__doc__)
    parser.add_argument("--dir", type=Path, default=None, help="migrations directory")
    args = parser.parse_args(argv)
    from shared import logging as jsonlog

    jsonlog.configure("migrate", os.environ.get("LOG_LEVEL", "INFO").upper())
    database_url = os.environ.get("DATABASE_URL", "").strip()
    if not database_url:
        print("configuration error: DATABASE_URL: is required", file=sys.stderr)
        return 2
    try:
        done = apply(database_url, args.dir)
    except MigrationError as error:
        print(f"migration error: {error}", file=sys.stderr)
        return 1
    except psycopg.OperationalError as error:
        print(f"migration error: cannot reach the database: {error}", file=sys.stderr)
        return 1
    log.info("migrations up to date (%d applied now)", len(done))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
