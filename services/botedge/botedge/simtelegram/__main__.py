"""`python -m botedge.simtelegram`: the simulated Bot API on PORT (default 8081)."""

from __future__ import annotations

from botedge.simtelegram.app import create_app
from shared.lifecycle import run_without_database

if __name__ == "__main__":
    run_without_database("simtelegram", create_app, 8081)
