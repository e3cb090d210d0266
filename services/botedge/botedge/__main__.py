"""`python -m botedge --role api|worker`: serve webhooks, or claim and handle updates."""

from __future__ import annotations

import argparse
import os

from botedge.app import create_api_app, create_worker_app
from botedge.settings import load
from shared import lifecycle
from shared import logging as jsonlog
from shared.settings import exit_on_error


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m botedge")
    parser.add_argument("--role", choices=("api", "worker"), required=True)
    args = parser.parse_args(argv)
    settings = exit_on_error(lambda: load(os.environ, args.role))
    jsonlog.configure(f"botedge-{args.role}", settings.common.log_level, settings.secrets)
    app = create_api_app(settings) if args.role == "api" else create_worker_app(settings)
    common = settings.common
    lifecycle.run(app, host=common.host, port=common.port, shutdown_timeout=common.shutdown_timeout)


if __name__ == "__main__":
    main()
