"""Each service's table of error kinds, against docs/errors.md: a client can look up every
problem type a service answers with, at the status it is answered with."""

from __future__ import annotations

import re

import pytest

from billing.app import STATUS as BILLING
from botedge.app import STATUS as BOTEDGE
from panel_api.app import STATUS as PANEL
from shared.errors import ServiceError
from tests.conftest import ROOT

DOCUMENTED = {
    slug: int(status)
    for slug, status in re.findall(
        r"^\| `/problems/([a-z-]+)` \| (\d{3}) \|", (ROOT / "docs/errors.md").read_text(), re.M
    )
}


@pytest.mark.parametrize(
    "table", [BILLING, BOTEDGE, PANEL], ids=["billing", "botedge", "panel-api"]
)
def test_every_error_kind_is_documented_at_its_status(table: dict[type[ServiceError], int]) -> None:
    for kind, status in table.items():
        assert kind.slug in DOCUMENTED, f"{kind.__name__}: /problems/{kind.slug} not in docs"
        if kind.slug != "internal-error":
            assert DOCUMENTED[kind.slug] == status or kind.slug in SEVERAL, (kind, status)


# Slugs answered at more than one status, each said in the docs' "when" column.
SEVERAL = {"unknown-gateway"}
