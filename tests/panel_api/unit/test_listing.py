"""A list's sorts are declared once, as the `Literal` its query's `sort` field has; the
listing checks that it names each sort both ways, in the order of its columns."""

from __future__ import annotations

import datetime as dt
from typing import Literal

import pytest

from panel_api.access import ID, Column, Listing

WHEN = Column("created_at", dt.datetime)


def test_listing__takes_the_literal_naming_each_sort_both_ways() -> None:
    listing = Listing(
        "x",
        key=(ID,),
        sorts=(ID, WHEN),
        sort_type=Literal["id", "-id", "created_at", "-created_at"],
    )
    assert listing.sorts == (ID, WHEN)


@pytest.mark.parametrize(
    "sort_type",
    [
        Literal["id", "-id"],
        Literal["id", "-id", "created_at"],
        Literal["-id", "id", "created_at", "-created_at"],
        Literal["id", "-id", "created_at", "-created_at", "amount"],
    ],
)
def test_listing__refuses_a_literal_that_names_other_sorts(sort_type: object) -> None:
    with pytest.raises(TypeError, match="Literal"):
        Listing("x", key=(ID,), sorts=(ID, WHEN), sort_type=sort_type)
