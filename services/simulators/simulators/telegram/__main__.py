"""`python -m simulators.telegram`: the simulated Bot API on PORT (default 8081)."""

from __future__ import annotations

from shared.lifecycle import run_without_database
from simulators.telegram.app import create_app

if __name__ == "__main__":
    run_without_database("simtelegram", create_app, 8081)
