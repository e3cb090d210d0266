"""Migrations after the previous release only expand the schema (docs/upgrading.md), so that
release's services keep running on it during an upgrade and after a rollback. A contract
step (drop, rename, retype, SET NOT NULL) says so on its first line: `-- contract: ...`."""

from __future__ import annotations

import re

from tests.conftest import ROOT

# The last migration of the previous release, v0.1.0.
PREVIOUS_RELEASE_LAST = 42

CONTRACTING = [
    (re.compile(r"\bDROP\s+(TABLE|COLUMN|TYPE|VIEW|FUNCTION)\b", re.I), "drops what it may read"),
    (re.compile(r"\bRENAME\b", re.I), "renames what it reads"),
    (re.compile(r"\bALTER\s+COLUMN\s+\w+\s+(SET\s+DATA\s+)?TYPE\b", re.I), "retypes a column"),
    (re.compile(r"\bSET\s+NOT\s+NULL\b", re.I), "refuses its writes without the column"),
    (
        re.compile(
            r"\bADD\s+COLUMN\s+(?:IF\s+NOT\s+EXISTS\s+)?\w+\s+[^,;]*\bNOT\s+NULL\b(?![^,;]*\bDEFAULT\b)",
            re.I,
        ),
        "adds a NOT NULL column without a default its inserts would fill",
    ),
]


def contracting(sql: str) -> list[str]:
    """What in `sql` the previous release's code could trip on; nothing for a contract step."""
    if sql.lstrip().lower().startswith("-- contract:"):
        return []
    code = "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
    return [why for pattern, why in CONTRACTING if pattern.search(code)]


def test_expand__contracting_statements_are_found_and_expanding_ones_pass() -> None:
    assert contracting("ALTER TABLE people DROP COLUMN nickname;") == ["drops what it may read"]
    assert contracting("ALTER TABLE plans RENAME COLUMN price TO price_minor;")
    assert contracting("ALTER TABLE plans ALTER COLUMN price TYPE bigint;")
    assert contracting("ALTER TABLE plans ALTER COLUMN price SET NOT NULL;")
    assert contracting("ALTER TABLE plans ADD COLUMN zone text NOT NULL;")
    assert contracting("-- contract: finishes 0043's expand\nALTER TABLE p DROP COLUMN x;") == []
    # Expanding: a column with a default, a nullable one, a widened check, an index.
    assert contracting("ALTER TABLE plans ADD COLUMN zone text NOT NULL DEFAULT 'UTC';") == []
    assert contracting("ALTER TABLE plans ADD COLUMN note text;") == []
    assert (
        contracting(
            "ALTER TABLE e DROP CONSTRAINT e_kind_check; ALTER TABLE e ADD CHECK (k IN ('a','b'));"
        )
        == []
    )
    assert (
        contracting("CREATE INDEX CONCURRENTLY plans_by_zone ON plans (zone); -- DROP TABLE x")
        == []
    )


def test_expand__migrations_after_the_previous_release_only_expand() -> None:
    newer = [
        path
        for path in sorted((ROOT / "migrations").glob("*.sql"))
        if int(path.name[:4]) > PREVIOUS_RELEASE_LAST
    ]
    found = {path.name: why for path in newer if (why := contracting(path.read_text()))}
    assert found == {}, (
        "a contract step must wait a release after its expand step (docs/upgrading.md);"
        " mark it `-- contract: ...` on its first line when it does"
    )
    assert (ROOT / "migrations" / f"{PREVIOUS_RELEASE_LAST:04d}_webhook_url.sql").exists()
