"""A throwaway database for a benchmark: BENCH_DATABASE_URL's server, or an embedded one."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loadtest.stack import database  # noqa: E402


@contextmanager
def bench_database(settings: dict[str, str]) -> Iterator[str]:
    """A fresh migrated database; dropped (or its server removed) afterwards."""
    with database(settings) as (url, _):
        yield url
