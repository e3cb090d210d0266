"""`python -m panel_api`: serve the panel API. `python -m panel_api seed`: demo data."""

from __future__ import annotations

import argparse
import os
import sys

from panel_api.app import create_app
from panel_api.settings import load
from shared import lifecycle
from shared import logging as jsonlog
from shared.settings import Reader, exit_on_error


def serve() -> None:
    settings = exit_on_error(lambda: load(os.environ))
    jsonlog.configure("panel-api", settings.common.log_level, settings.secrets)
    lifecycle.run_service(create_app(settings), settings.common)


def seed_demo() -> None:
    from panel_api.passwords import DEFAULT_ROUNDS, MAX_ROUNDS, MIN_ROUNDS
    from panel_api.seed import DEMO_EMAIL, seed

    r = Reader(os.environ)
    database_url, email, password, rounds = exit_on_error(
        lambda: (
            r.database_url(),
            r.text("DEMO_OWNER_EMAIL", DEMO_EMAIL),
            r.secret("DEMO_OWNER_PASSWORD", min_bytes=8),
            r.integer("BCRYPT_ROUNDS", DEFAULT_ROUNDS, minimum=MIN_ROUNDS, maximum=MAX_ROUNDS),
        )
    )
    jsonlog.configure("seed", "INFO", [database_url, password])
    seeded = seed(database_url.reveal(), email, password.reveal(), rounds)
    print("seeded demo data" if seeded else "database already has data; not seeding")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m panel_api")
    parser.add_argument("command", nargs="?", choices=("serve", "seed"), default="serve")
    args = parser.parse_args(argv)
    if args.command == "seed":
        seed_demo()
    else:
        serve()


if __name__ == "__main__":
    main()
