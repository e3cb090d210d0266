"""Routes built from a service's table of operations: each served by its feature's method, and
a table entry no feature serves (or a scheme without its secret) stops the service at start."""

from __future__ import annotations

import pytest
from starlette.requests import Request
from starlette.responses import Response

from billing.app import OPERATIONS as BILLING
from botedge.app import OPERATIONS as BOTEDGE
from shared.openapi import Operation, routes
from shared.settings import Secret


class Things:
    async def list_things(self, request: Request) -> Response:
        return Response("")


class Other:
    async def other(self, request: Request) -> Response:
        return Response("")


TABLE = {
    ("GET", "/things"): Operation("Things", handler=Things.list_things),
    ("GET", "/other"): Operation("Other", security=None, handler=Other.other),
}


def test_routes__one_per_operation_with_its_path_and_method() -> None:
    built = routes(TABLE, [Things(), Other()], {"bearer": Secret("s" * 32)})
    assert [(r.path, sorted(r.methods or ())) for r in built] == [
        ("/things", ["GET", "HEAD"]),
        ("/other", ["GET", "HEAD"]),
    ]


def test_routes__an_operation_no_feature_serves_stops_the_start() -> None:
    with pytest.raises(RuntimeError, match="GET /other: no feature serves it"):
        routes(TABLE, [Things()], {"bearer": Secret("s" * 32)})


def test_routes__a_guarded_operation_without_its_secret_stops_the_start() -> None:
    with pytest.raises(RuntimeError, match="GET /things: no secret for 'bearer'"):
        routes(TABLE, [Things(), Other()], {})


@pytest.mark.parametrize("table", [BILLING, BOTEDGE], ids=["billing", "botedge"])
def test_service_tables__name_a_handler_for_every_operation(table: dict) -> None:
    assert [key for key, op in table.items() if op.handler is None] == []
