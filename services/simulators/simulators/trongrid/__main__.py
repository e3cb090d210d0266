"""`python -m simulators.trongrid`: the simulated TronGrid on PORT (default 8082)."""

from __future__ import annotations

from shared.lifecycle import run_without_database
from simulators.trongrid.app import create_app

if __name__ == "__main__":
    run_without_database("simtrongrid", create_app, 8082)
