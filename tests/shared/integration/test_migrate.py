"""Migrations against a real PostgreSQL: once each, idempotent, concurrent-safe, tamper-evident."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from shared import migrate
from shared.migrate import MigrationError


def write_migrations(directory: Path) -> None:
    directory.mkdir(exist_ok=True)
    # Without IF NOT EXISTS, a second application would fail loudly.
    (directory / "0001_first.sql").write_text("CREATE TABLE first_table (id int PRIMARY KEY);\n")
    (directory / "0002_second.sql").write_text(
        "CREATE TABLE second_table (id int PRIMARY KEY);\n"
        "INSERT INTO first_table VALUES (1);\n"
        # Slow enough that concurrent runners overlap.
        "SELECT pg_sleep(0.3);\n"
    )


def applied(url: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")
        return [(int(v), str(n)) for v, n in rows.fetchall()]


def test_apply__applies_in_order_once(empty_database_url: str, tmp_path: Path) -> None:
    write_migrations(tmp_path / "m")
    done = migrate.apply(empty_database_url, tmp_path / "m")
    assert [m.filename for m in done] == ["0001_first.sql", "0002_second.sql"]
    assert applied(empty_database_url) == [(1, "first"), (2, "second")]


def test_apply__second_run_is_a_no_op(empty_database_url: str, tmp_path: Path) -> None:
    write_migrations(tmp_path / "m")
    migrate.apply(empty_database_url, tmp_path / "m")
    assert migrate.apply(empty_database_url, tmp_path / "m") == []
    with psycopg.connect(empty_database_url) as conn:
        assert conn.execute("SELECT count(*) FROM first_table").fetchone() == (1,)


def test_apply__two_concurrent_runners_apply_each_file_once(
    empty_database_url: str, tmp_path: Path
) -> None:
    write_migrations(tmp_path / "m")
    results: list[list[str]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        barrier.wait()
        try:
            results.append([m.filename for m in migrate.apply(empty_database_url, tmp_path / "m")])
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    assert sorted(results, key=len) == [[], ["0001_first.sql", "0002_second.sql"]]
    assert applied(empty_database_url) == [(1, "first"), (2, "second")]
    with psycopg.connect(empty_database_url) as conn:
        assert conn.execute("SELECT count(*) FROM first_table").fetchone() == (1,)


@pytest.mark.process
def test_apply__two_processes_at_once(empty_database_url: str, tmp_path: Path) -> None:
    write_migrations(tmp_path / "m")
    env = {"DATABASE_URL": empty_database_url, "PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "shared.migrate", "--dir", str(tmp_path / "m")],
            env=env,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=60)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert sum(o.count("applied migration 0002_second.sql") for o in outputs) == 1
    assert applied(empty_database_url) == [(1, "first"), (2, "second")]


def test_apply__edited_applied_file_is_refused_by_name(
    empty_database_url: str, tmp_path: Path
) -> None:
    write_migrations(tmp_path / "m")
    migrate.apply(empty_database_url, tmp_path / "m")
    (tmp_path / "m" / "0001_first.sql").write_text("CREATE TABLE first_table (id bigint);\n")
    (tmp_path / "m" / "0003_third.sql").write_text("CREATE TABLE third_table (id int);\n")
    with pytest.raises(MigrationError, match=r"0001_first\.sql was edited after it was applied"):
        migrate.apply(empty_database_url, tmp_path / "m")
    # Nothing after the refusal ran.
    assert applied(empty_database_url) == [(1, "first"), (2, "second")]


@pytest.mark.process
def test_cli__edited_file_exits_non_zero_naming_it(empty_database_url: str, tmp_path: Path) -> None:
    write_migrations(tmp_path / "m")
    migrate.apply(empty_database_url, tmp_path / "m")
    (tmp_path / "m" / "0002_second.sql").write_text("SELECT 1;\n")
    result = subprocess.run(
        [sys.executable, "-m", "shared.migrate", "--dir", str(tmp_path / "m")],
        env={"DATABASE_URL": empty_database_url, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "0002_second.sql was edited" in result.stderr


def test_apply__failing_file_rolls_back_and_names_it(
    empty_database_url: str, tmp_path: Path
) -> None:
    directory = tmp_path / "m"
    directory.mkdir()
    (directory / "0001_ok.sql").write_text("CREATE TABLE ok_table (id int);\n")
    (directory / "0002_bad.sql").write_text(
        "CREATE TABLE half_table (id int);\nSELECT no_such_column FROM ok_table;\n"
    )
    with pytest.raises(MigrationError, match=r"0002_bad\.sql failed"):
        migrate.apply(empty_database_url, directory)
    assert applied(empty_database_url) == [(1, "ok")]
    with psycopg.connect(empty_database_url) as conn:
        assert conn.execute("SELECT to_regclass('half_table')").fetchone() == (None,)


def test_discover__rejects_misnamed_and_duplicate_versions(tmp_path: Path) -> None:
    (tmp_path / "0001_a.sql").write_text("SELECT 1;")
    (tmp_path / "0001_b.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match="version 1 also used"):
        migrate.discover(tmp_path)
    (tmp_path / "0001_b.sql").unlink()
    (tmp_path / "add-table.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match=r"add-table\.sql"):
        migrate.discover(tmp_path)


def test_repository_migrations__apply_cleanly(empty_database_url: str) -> None:
    done = migrate.apply(empty_database_url)
    assert done, "the repository ships at least one migration"
    assert applied(empty_database_url)[-1][0] == migrate.latest_version(migrate.default_dir())
