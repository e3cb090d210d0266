"""Billing's HTTP app: routes are added by the payments and sweep modules."""

from __future__ import annotations

from starlette.applications import Starlette

from billing.settings import BillingSettings
from shared.web import create_service_app


def create_app(settings: BillingSettings) -> Starlette:
    return create_service_app(settings.common, routes=[])
