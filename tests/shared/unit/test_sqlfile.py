from __future__ import annotations

import pytest

from shared.sqlfile import QueryFileError, parse


def test_parse__splits_named_blocks_and_drops_doc_comments() -> None:
    text = """
-- first --
-- Why it exists.
SELECT 1;

-- second_one --
SELECT %(x)s
  -- inline comment kept
  FROM t;
"""
    queries = parse(text)
    assert queries == {
        "first": "SELECT 1",
        "second_one": "SELECT %(x)s\n  -- inline comment kept\n  FROM t",
    }


def test_parse__duplicate_block_is_an_error() -> None:
    with pytest.raises(QueryFileError, match="'a' appears twice"):
        parse("-- a --\nSELECT 1;\n-- a --\nSELECT 2;")


def test_parse__empty_block_is_an_error() -> None:
    with pytest.raises(QueryFileError, match="'a' is empty"):
        parse("-- a --\n-- only a comment\n-- b --\nSELECT 1;")
