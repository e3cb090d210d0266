"""`python -m billing.simcheckout`: the simulated checkout on PORT (default 8083)."""

from __future__ import annotations

from billing.simcheckout.app import create_app
from shared.lifecycle import run_without_database

if __name__ == "__main__":
    run_without_database("simcheckout", create_app, 8083)
