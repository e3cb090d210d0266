"""The panel API app."""

from __future__ import annotations

from starlette.applications import Starlette

from panel_api import auth, errors
from panel_api.settings import PanelSettings
from shared.clock import SYSTEM_CLOCK, Clock
from shared.errors import service_error_handler
from shared.web import create_service_app

# The one place the panel's errors meet HTTP.
STATUS: dict[type[errors.PanelError], int] = {errors.DatabaseUnavailable: 503}


def create_app(settings: PanelSettings, *, clock: Clock = SYSTEM_CLOCK) -> Starlette:
    return create_service_app(
        settings.common,
        routes=auth.SignIn(settings.jwt_secret, clock, settings.trusted_proxies).routes(),
        exception_handlers={errors.PanelError: service_error_handler(STATUS)},
    )
