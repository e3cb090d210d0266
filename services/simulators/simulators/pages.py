"""The simulators' own web pages (the chat window, the wallet): `index.html` at `/` and the
files beside it under `/assets/`, with the panel's strict content policy."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from shared.web import PAGE_HEADERS


def page_routes(static: Path) -> list[BaseRoute]:
    async def index(request: Request) -> Response:
        return FileResponse(static / "index.html", media_type="text/html", headers=PAGE_HEADERS)

    return [
        Route("/", index, methods=["GET", "HEAD"]),
        Mount("/assets", StaticFiles(directory=static), name="assets"),
    ]
