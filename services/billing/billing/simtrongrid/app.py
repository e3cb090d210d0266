"""The simulated TronGrid: java-tron's wallet endpoints with their real empty answers."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shared.web import create_plain_app


async def unknown_transaction(request: Request) -> Response:
    # java-tron answers an unknown or unconfirmed transaction with an empty object.
    return JSONResponse({})


def create_app() -> Starlette:
    paths = (
        "/wallet/gettransactionbyid",
        "/walletsolidity/gettransactionbyid",
        "/wallet/gettransactioninfobyid",
        "/walletsolidity/gettransactioninfobyid",
    )
    return create_plain_app(
        [Route(path, unknown_transaction, methods=["GET", "POST"]) for path in paths]
    )
