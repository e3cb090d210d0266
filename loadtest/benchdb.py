"""A throwaway database for a benchmark: BENCH_DATABASE_URL's server, or an embedded one."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from shared import migrate  # noqa: E402
from shared.testing import start_embedded, with_database  # noqa: E402


@contextmanager
def bench_database(settings: dict[str, str]) -> Iterator[str]:
    """A fresh migrated database; dropped (or its server removed) afterwards."""
    pg = None
    admin = os.environ.get("BENCH_DATABASE_URL")
    if not admin:
        pg, admin = start_embedded(settings)
    name = f"bench_{os.getpid()}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = with_database(admin, name)
    try:
        migrate.apply(url)
        yield url
    finally:
        if pg is not None:
            pg.destroy()
            pg.data_dir.parent.rmdir()
        else:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
