"""`python -m billing`: serve billing's HTTP API."""

from __future__ import annotations

import os

from billing.app import create_app
from billing.settings import load
from shared import lifecycle
from shared import logging as jsonlog
from shared.settings import exit_on_error


def main() -> None:
    settings = exit_on_error(lambda: load(os.environ))
    jsonlog.configure("billing", settings.common.log_level, settings.secrets)
    common = settings.common
    lifecycle.run(
        create_app(settings),
        host=common.host,
        port=common.port,
        shutdown_timeout=common.shutdown_timeout,
    )


if __name__ == "__main__":
    main()
