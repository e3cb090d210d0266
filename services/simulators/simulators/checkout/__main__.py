"""`python -m simulators.checkout`: the simulated checkout on PORT (default 8083)."""

from __future__ import annotations

from shared.lifecycle import run_without_database
from simulators.checkout.app import create_app

if __name__ == "__main__":
    run_without_database("simcheckout", create_app, 8083)
