"""A service with a slow route and a failing route, run as a real process by the drain tests."""

from __future__ import annotations

import asyncio
import gc
import logging
import os

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shared import lifecycle
from shared import logging as jsonlog
from shared.settings import CommonSettings, Reader
from shared.web import create_service_app

log = logging.getLogger("slow-app")


async def slow(request: Request) -> Response:
    # The tests wait for this line: the request is in flight.
    log.info("slow request started")
    await asyncio.sleep(float(request.query_params.get("seconds", "2")))
    return JSONResponse({"finished": True})


async def echo(request: Request) -> Response:
    return Response(await request.body())


async def collector(request: Request) -> Response:
    return JSONResponse({"frozen": gc.get_freeze_count(), "thresholds": gc.get_threshold()})


async def fail(request: Request) -> Response:
    raise RuntimeError("internal detail that must not reach the client")


def main() -> None:
    settings = CommonSettings.read(Reader(os.environ), "slow-app", 8999)
    jsonlog.configure("slow-app", settings.log_level, [settings.database_url])
    app = create_service_app(
        settings,
        [
            Route("/slow", slow, methods=["GET"]),
            Route("/fail", fail, methods=["GET"]),
            Route("/echo", echo, methods=["POST"]),
            Route("/collector", collector, methods=["GET"]),
        ],
    )
    lifecycle.run_service(app, settings)


if __name__ == "__main__":
    main()
