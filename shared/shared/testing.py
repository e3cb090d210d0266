"""pytest plugin: a real PostgreSQL for the run and a fresh migrated database for each test.

The run uses TEST_DATABASE_URL when set (a role allowed to CREATE DATABASE), else starts the
embedded PostgreSQL in a temporary directory and removes it afterwards. Migrations run once into
a template database; each test gets `CREATE DATABASE ... TEMPLATE` (real commits across
connections, which SKIP LOCKED, advisory locks and NOTIFY need; a rolled-back transaction would
not do). Also: free ports, and serving an ASGI app with uvicorn on loopback in a thread.

Under pytest-xdist each worker process starts its own PostgreSQL (or, with TEST_DATABASE_URL,
its own template database) and hands out ports from its own range, so no two tests share a
port, a database or a data directory.
"""

from __future__ import annotations

import itertools
import os
import secrets
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import psycopg.sql
import pytest
import uvicorn

from shared import migrate
from shared.embedded_pg import EmbeddedPostgres, port_free
from shared.protocol import protocol_of
from shared.settings import DEFAULT_KEEP_ALIVE

# Durability off: test databases are thrown away, and fsync dominates a 2-core CI run.
FAST_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "400",
    "shared_buffers": "128MB",
    # The password is hashed once instead of 4096 times: a test connects thousands of times,
    # and each login otherwise costs both sides milliseconds of CPU.
    "scram_iterations": "1",
}


# Each xdist worker's ports: below the kernel's ephemeral range (32768 and up on Linux), so an
# outgoing connection never takes a port a test is about to bind, and apart from every other
# worker's, so two workers never hand out the same one.
PORT_BASE = 20000
PORTS_PER_WORKER = 1000
_port_counter = itertools.count()


def worker_index() -> int:
    """This xdist worker's number (gw3 -> 3); 0 when the run is not parallel."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name.removeprefix("gw")) if name.startswith("gw") else 0


def free_port() -> int:
    """A port of this worker's range that nothing is bound to, never the same one twice in a
    row of a thousand: a port handed out but not yet bound is not handed out again."""
    first = PORT_BASE + worker_index() * PORTS_PER_WORKER
    for _ in range(PORTS_PER_WORKER):
        port = first + next(_port_counter) % PORTS_PER_WORKER
        if port_free(port):
            return port
    raise RuntimeError(f"no free port in {first}-{first + PORTS_PER_WORKER - 1}")


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


@dataclass
class Cluster:
    """The PostgreSQL server of this run; `admin_url` may create and drop databases."""

    admin_url: str
    template: str | None = None

    def create_database(self, template: str | None = None) -> str:
        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            statement = psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(name))
            if template:
                # FILE_COPY copies the template's files (about 20 ms in RAM) instead of writing
                # each block through the WAL (about 40 ms); durability is off, so its
                # checkpoint costs nothing.
                statement = psycopg.sql.SQL(
                    "CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY"
                ).format(psycopg.sql.Identifier(name), psycopg.sql.Identifier(template))
            conn.execute(statement)
        return name

    def drop_database(self, name: str) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(
                psycopg.sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    psycopg.sql.Identifier(name)
                )
            )

    def url(self, name: str) -> str:
        return with_database(self.admin_url, name)


# Where a test run's PostgreSQL keeps its data when the machine has a RAM file system: on disk,
# each CREATE DATABASE after a DROP waited 0.4-0.6 s on the file system's journal; here 20 ms.
RAM_DIR = Path("/dev/shm")  # noqa: S108 - only mkdtemp makes directories in it


def start_embedded(
    settings: dict[str, str] | None = None, *, in_memory: bool = False
) -> tuple[EmbeddedPostgres, str]:
    """A throwaway embedded server in a temporary directory (in RAM when `in_memory` and the
    machine has /dev/shm); returns it and its admin URL."""
    ram = in_memory and RAM_DIR.is_dir() and os.access(RAM_DIR, os.W_OK)
    base = Path(tempfile.mkdtemp(prefix="gatehouse-pg-", dir=RAM_DIR if ram else None))
    pg = EmbeddedPostgres(
        base / "pg",
        password=secrets.token_urlsafe(24),
        port=free_port(),
        settings=settings or FAST_SETTINGS,
    )
    running = pg.start()
    return pg, pg.url(running.port)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    configured = os.environ.get("TEST_DATABASE_URL", "").strip()
    if configured:
        yield Cluster(admin_url=configured)
        return
    pg, admin_url = start_embedded(in_memory=True)
    try:
        yield Cluster(admin_url=admin_url)
    finally:
        pg.destroy()
        # The temporary parent directory is empty once the data directory is gone.
        pg.data_dir.parent.rmdir()


@pytest.fixture(scope="session")
def template_database(pg_cluster: Cluster) -> Iterator[str]:
    name = pg_cluster.create_database()
    try:
        migrate.apply(pg_cluster.url(name))
        with psycopg.connect(pg_cluster.admin_url, autocommit=True) as conn:
            # Mark it a template so `CREATE DATABASE ... TEMPLATE` needs no exclusive access
            # beyond having no connections, which migrate.apply has closed.
            conn.execute(
                psycopg.sql.SQL("ALTER DATABASE {} WITH IS_TEMPLATE true").format(
                    psycopg.sql.Identifier(name)
                )
            )
        pg_cluster.template = name
        yield name
    finally:
        with psycopg.connect(pg_cluster.admin_url, autocommit=True) as conn:
            conn.execute(
                psycopg.sql.SQL("ALTER DATABASE {} WITH IS_TEMPLATE false").format(
                    psycopg.sql.Identifier(name)
                )
            )
        pg_cluster.drop_database(name)


@pytest.fixture
def database_url(pg_cluster: Cluster, template_database: str) -> Iterator[str]:
    """A fresh, migrated database for this test alone."""
    name = pg_cluster.create_database(template_database)
    try:
        yield pg_cluster.url(name)
    finally:
        pg_cluster.drop_database(name)


@pytest.fixture
def empty_database_url(pg_cluster: Cluster) -> Iterator[str]:
    """A fresh database with no migrations applied."""
    name = pg_cluster.create_database()
    try:
        yield pg_cluster.url(name)
    finally:
        pg_cluster.drop_database(name)


@contextmanager
def serve_in_thread(app: Any, port: int | None = None) -> Iterator[str]:
    """Serve an ASGI app over real HTTP on loopback; yields its base URL."""
    port = port or free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_config=None,
        access_log=False,
        lifespan="on",
        http=protocol_of(app),
        proxy_headers=False,
        timeout_keep_alive=DEFAULT_KEEP_ALIVE,  # type: ignore[arg-type]  # as lifecycle.serve
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"app did not start on port {port}")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
