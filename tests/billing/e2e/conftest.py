from __future__ import annotations

import pytest

from tests.conftest import Serve, Served, serve_billing


@pytest.fixture
def billing(serve: Serve, database_url: str) -> Served:
    """billing in a thread of the test, over real HTTP on loopback, every gateway on."""
    return serve_billing(serve, database_url, DB_POOL_MAX="20")
