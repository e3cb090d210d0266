"""The owner's panel page: static files under `/assets/`, and `index.html` for every other GET
outside the API, so a reload keeps the view. No build step and no CDN: a server may have no
internet, and what is served is what is in `static/`."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from panel_api import errors
from shared.web import PAGE_HEADERS

STATIC = Path(__file__).parent / "static"
# Paths that are the API's, or the service's own: never the page.
RESERVED = ("/v1", "/internal", "/healthz", "/readyz", "/metrics", "/openapi.json", "/assets")
ANY_METHOD = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def reserved(path: str) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in RESERVED)


class PageRoute(Route):
    """The page's catch-all, which never takes a reserved path: there the router answers
    itself, 405 with `Allow` for a path an API route has under another method, 404 for one no
    route has."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and reserved(scope["path"]):
            return Match.NONE, {}
        return super().matches(scope)


async def index(request: Request) -> Response:
    # Any method reaches here, so that a path no route takes stays a 404, not a 405.
    if request.method not in ("GET", "HEAD"):
        raise errors.NotFound(f"nothing at {request.url.path[:200]}")
    return FileResponse(STATIC / "index.html", media_type="text/html", headers=PAGE_HEADERS)


def routes() -> list[BaseRoute]:
    return [
        Mount("/assets", StaticFiles(directory=STATIC), name="assets"),
        PageRoute("/", index, methods=ANY_METHOD),
        PageRoute("/{path:path}", index, methods=ANY_METHOD),
    ]
