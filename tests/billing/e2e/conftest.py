from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import ServiceProcess, service_env


@pytest.fixture
def billing(start_service: Callable[..., ServiceProcess], database_url: str) -> ServiceProcess:
    """billing as a real process on loopback, every gateway on."""
    return start_service("billing", env=service_env(database_url, DB_POOL_MAX="20"))
