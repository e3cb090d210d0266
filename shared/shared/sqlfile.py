"""Named SQL blocks: a `.sql` file split on `-- name --` header lines, parsed once.

    -- claim_due_updates --
    -- Take the earliest waiting update of each person.
    SELECT ...

The first comment lines after the header document the statement and are kept out of the SQL.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import LiteralString

_HEADER = re.compile(r"^--\s*([a-z_][a-z0-9_]*)\s*--\s*$", re.MULTILINE)


class QueryFileError(Exception):
    """A query file has a duplicate or empty block."""


def parse(text: str, *, source: str = "<sql>") -> dict[str, LiteralString]:
    headers = list(_HEADER.finditer(text))
    queries: dict[str, LiteralString] = {}
    for index, header in enumerate(headers):
        name = header.group(1)
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        body = _strip_leading_comments(text[header.end() : end])
        if name in queries:
            raise QueryFileError(f"{source}: block {name!r} appears twice")
        if not body:
            raise QueryFileError(f"{source}: block {name!r} is empty")
        # Trusted text shipped with the code, never built from input.
        queries[name] = body
    return queries


def _strip_leading_comments(block: str) -> str:
    lines = block.strip().splitlines()
    while lines and lines[0].lstrip().startswith("--"):
        lines.pop(0)
    return "\n".join(lines).strip().rstrip(";").strip()


def load(package: str, filename: str = "queries.sql") -> dict[str, LiteralString]:
    """The named blocks of a package's SQL file."""
    text = resources.files(package).joinpath(filename).read_text(encoding="utf-8")
    return parse(text, source=f"{package}/{filename}")
