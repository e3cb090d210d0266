"""The simulated Bot API: `/bot<token>/<method>` with Telegram's envelope and error bodies."""

from __future__ import annotations

import re
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shared.web import create_plain_app

TOKEN = re.compile(r"^(\d{3,}):[A-Za-z0-9_-]{30,}$")


def ok(result: Any) -> Response:
    return JSONResponse({"ok": True, "result": result})


def error(code: int, description: str, parameters: dict[str, Any] | None = None) -> Response:
    body: dict[str, Any] = {"ok": False, "error_code": code, "description": description}
    if parameters:
        body["parameters"] = parameters
    return JSONResponse(body, status_code=code)


async def bot_method(request: Request) -> Response:
    token = request.path_params["token"]
    method = request.path_params["method"]
    match = TOKEN.match(token)
    if match is None:
        return error(401, "Unauthorized: invalid token specified")
    bot_id = int(match.group(1))
    if method.lower() == "getme":
        return ok(
            {
                "id": bot_id,
                "is_bot": True,
                "first_name": f"Sim Bot {bot_id}",
                "username": f"sim{bot_id}_bot",
                "can_join_groups": True,
                "can_read_all_group_messages": False,
                "supports_inline_queries": False,
            }
        )
    return error(404, "Not Found: method not found")


def create_app() -> Starlette:
    return create_plain_app(
        [Route("/bot{token}/{method}", bot_method, methods=["GET", "POST"])],
    )
