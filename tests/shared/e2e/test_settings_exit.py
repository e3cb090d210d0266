"""A bad or missing setting stops the real process with one line naming the variable."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT, service_env

URL = "postgresql://postgres@127.0.0.1:1/none"


@pytest.mark.parametrize(
    ("argv", "overrides", "variable"),
    [
        (["panel_api"], {"JWT_SECRET": "too-short"}, "JWT_SECRET"),
        (["billing"], {"SWEEP_TOKEN": ""}, "SWEEP_TOKEN"),
        (["billing"], {"STRIPE_WEBHOOK_SECRET": "sk_live_wrong"}, "STRIPE_WEBHOOK_SECRET"),
        (["billing"], {"WAYFORPAY_SECRET_KEY": ""}, "WAYFORPAY_SECRET_KEY"),
        (["botedge", "--role", "worker"], {"BOT_TOKEN_KEY": "nope"}, "BOT_TOKEN_KEY"),
        (["botedge", "--role", "api"], {"PORT": "99999"}, "PORT"),
        (["panel_api"], {"DATABASE_URL": ""}, "DATABASE_URL"),
        # Combinations that would start and then misbehave.
        (["billing"], {"DB_POOL_MIN": "12", "DB_POOL_MAX": "10"}, "DB_POOL_MIN"),
        (
            ["botedge", "--role", "worker"],
            {"WORKER_SLOTS": "32", "DB_POOL_MAX": "10"},
            "DB_POOL_MAX",
        ),
        (
            ["botedge", "--role", "worker"],
            {"LEASE_SECONDS": "10", "TELEGRAM_POLL_TIMEOUT": "20"},
            "TELEGRAM_POLL_TIMEOUT",
        ),
    ],
)
def test_service__bad_setting_exits_naming_the_variable(
    argv: list[str], overrides: dict[str, str], variable: str
) -> None:
    env = service_env(URL, **overrides)
    result = subprocess.run(
        [sys.executable, "-m", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [lines[0]], "one clear line, no traceback"
    assert lines[0].startswith(f"configuration error: {variable}:")
    assert "Traceback" not in result.stderr
