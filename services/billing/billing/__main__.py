"""`python -m billing`: serve billing's HTTP API. `python -m billing sweep`: run the sweep."""

from __future__ import annotations

import argparse
import os

from shared import lifecycle
from shared import logging as jsonlog
from shared.settings import exit_on_error


def serve() -> None:
    from billing.app import create_app
    from billing.settings import load

    settings = exit_on_error(lambda: load(os.environ))
    jsonlog.configure("billing", settings.common.log_level, settings.secrets)
    lifecycle.run_service(create_app(settings), settings.common)


def sweep(every: float | None) -> int:
    from billing import sweeper

    settings = exit_on_error(lambda: sweeper.load(os.environ))
    jsonlog.configure("billing-sweep", settings.log_level, [settings.sweep_token])
    return sweeper.run(settings, every)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m billing")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("serve", help="serve the HTTP API (the default)")
    sweep_parser = commands.add_parser("sweep", help="call POST /v1/sweep until nothing is due")
    sweep_parser.add_argument(
        "--every", type=float, default=None, metavar="SECONDS", help="repeat on this interval"
    )
    args = parser.parse_args(argv)
    if args.command == "sweep":
        if args.every is not None and args.every <= 0:
            parser.error("--every must be positive")
        return sweep(args.every)
    serve()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
