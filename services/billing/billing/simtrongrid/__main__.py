"""`python -m billing.simtrongrid`: the simulated TronGrid on PORT (default 8082)."""

from __future__ import annotations

from billing.simtrongrid.app import create_app
from shared.lifecycle import run_without_database

if __name__ == "__main__":
    run_without_database("simtrongrid", create_app, 8082)
