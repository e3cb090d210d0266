"""The panel API app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.routing import Route

from panel_api import auth
from panel_api.settings import PanelSettings
from shared.web import Runtime, create_service_app


def create_app(settings: PanelSettings) -> Starlette:
    @asynccontextmanager
    async def resources(state: Runtime) -> AsyncIterator[None]:
        state.extra["jwt_secret"] = settings.jwt_secret
        yield

    return create_service_app(
        settings.common,
        routes=[
            Route("/v1/auth/login", auth.login, methods=["POST"]),
            Route("/v1/me", auth.me, methods=["GET"]),
        ],
        extra_lifespan=resources,
    )
