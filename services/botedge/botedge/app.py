"""The bot edge's processes: the webhook API and the worker (health and metrics on its PORT)."""

from __future__ import annotations

from starlette.applications import Starlette

from botedge.settings import BotedgeSettings
from shared.web import create_service_app


def create_api_app(settings: BotedgeSettings) -> Starlette:
    return create_service_app(settings.common, routes=[])


def create_worker_app(settings: BotedgeSettings) -> Starlette:
    return create_service_app(settings.common, routes=[])
