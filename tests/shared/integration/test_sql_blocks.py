"""Every named SQL block of every service, prepared against the migrated schema: a block that
names a column or table the migrations do not make, or does not parse, fails here, not when
the path that runs it is first taken."""

from __future__ import annotations

import re

import psycopg
import pytest
from psycopg import errors

from shared import sqlfile

PACKAGES = (("billing", "queries.sql"), ("botedge", "queries.sql"), ("panel_api", "queries.sql"))
PACKAGES += (("simulators", "demo_month.sql"),)
# PREPARE takes these; others (LISTEN, SET, DDL) are left to the tests that run them.
PREPARABLE = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "VALUES", "MERGE", "(")
_NAMED = re.compile(r"%\((\w+)\)s")


def positional(sql: str) -> str:
    """psycopg's `%(name)s` and `%s` as PostgreSQL's `$n` (a name keeps its number)."""
    numbers: dict[str, int] = {}

    def named(match: re.Match[str]) -> str:
        return f"${numbers.setdefault(match.group(1), len(numbers) + 1)}"

    text = _NAMED.sub(named, sql)
    count = iter(range(len(numbers) + 1, 10_000))
    text = re.sub(r"%s", lambda _: f"${next(count)}", text)
    return text.replace("%%", "%")


def blocks() -> list[tuple[str, str, str]]:
    found = []
    for package, filename in PACKAGES:
        for name, sql in sqlfile.load(package, filename).items():
            found.append((f"{package}:{name}", name, sql))
    return found


def test_positional__names_keep_their_number_and_percent_signs_unescape() -> None:
    assert positional("a = %(x)s AND b = %(y)s OR c = %(x)s") == "a = $1 AND b = $2 OR c = $1"
    assert positional("a = %s AND b LIKE 'x%%'") == "a = $1 AND b LIKE 'x%'"


def test_blocks__a_block_naming_a_missing_column_is_caught(database_url: str) -> None:
    block = positional("SELECT nickname FROM people WHERE id = %(id)s")
    with psycopg.connect(database_url) as conn, pytest.raises(errors.UndefinedColumn):
        conn.execute(f"PREPARE block AS {block}")  # type: ignore[arg-type]


def statements(sql: str) -> list[str]:
    """A block's statements: a few blocks hold several, run as one simple query."""
    return [part.strip() for part in re.split(r";\s*\n", sql) if part.strip()]


# Analysed whole, every table, column and function found; what is left is a parameter's type,
# which psycopg sends with each value and PREPARE without values cannot know.
ANALYSED = (errors.IndeterminateDatatype, errors.AmbiguousParameter, errors.DatatypeMismatch)


def test_blocks__every_named_block_prepares_against_the_migrated_schema(database_url: str) -> None:
    failures = []
    prepared = 0
    with psycopg.connect(database_url) as conn:
        # The demo month's blocks work on a table of the session's own.
        conn.execute(sqlfile.load("simulators", "demo_month.sql")["month_shift_table"])
        for label, _, sql in blocks():
            for statement in statements(sql):
                if not statement.lstrip().upper().startswith(PREPARABLE):
                    continue
                prepared += 1
                try:
                    with conn.transaction():
                        conn.execute(f"PREPARE block AS {positional(statement)}")  # type: ignore[arg-type]
                        conn.execute("DEALLOCATE block")
                except ANALYSED:
                    pass
                except psycopg.Error as error:
                    failures.append(f"{label}: {str(error).splitlines()[0]}")
    assert failures == []
    assert prepared > 250


@pytest.mark.parametrize("package", ["billing", "botedge", "panel_api"])
def test_blocks__each_service_has_its_file(package: str) -> None:
    assert sqlfile.load(package)
