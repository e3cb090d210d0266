"""A service with a slow route and a failing route, run as a real process by the drain tests."""

from __future__ import annotations

import asyncio
import os

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shared import lifecycle
from shared import logging as jsonlog
from shared.settings import CommonSettings, Reader
from shared.web import create_service_app


async def slow(request: Request) -> Response:
    await asyncio.sleep(float(request.query_params.get("seconds", "2")))
    return JSONResponse({"finished": True})


async def fail(request: Request) -> Response:
    raise RuntimeError("internal detail that must not reach the client")


def main() -> None:
    settings = CommonSettings.read(Reader(os.environ), "slow-app", 8999)
    jsonlog.configure("slow-app", settings.log_level, [settings.database_url])
    app = create_service_app(
        settings,
        [Route("/slow", slow, methods=["GET"]), Route("/fail", fail, methods=["GET"])],
    )
    lifecycle.run(
        app, host=settings.host, port=settings.port, shutdown_timeout=settings.shutdown_timeout
    )


if __name__ == "__main__":
    main()
