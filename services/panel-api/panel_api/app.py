"""The panel API app."""

from __future__ import annotations

from starlette.applications import Starlette

from panel_api.settings import PanelSettings
from shared.web import create_service_app


def create_app(settings: PanelSettings) -> Starlette:
    return create_service_app(settings.common, routes=[])
