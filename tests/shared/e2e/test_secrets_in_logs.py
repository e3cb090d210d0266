"""Every log record, at DEBUG, from every logger, during requests that carry secrets."""

from __future__ import annotations

import io
import logging

import httpx
import pytest

from billing.app import create_app as create_billing
from billing.settings import load as load_billing
from shared import logging as jsonlog
from shared.logging import REDACTED
from shared.testing import serve_in_thread
from shared.tls import verified
from simulators.telegram.app import create_app as create_simtelegram
from tests.conftest import SECRETS, service_env

BOT_TOKEN = "7012345678:AAFq3nW9xYzT0kLm4sPqRvUe8cHdJb2gA1Q"


def test_no_secret_in_any_log_record(database_url: str, caplog: pytest.LogCaptureFixture) -> None:
    settings = load_billing(service_env(database_url))
    jsonlog.configure("billing", "DEBUG", settings.secrets)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(jsonlog.JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    db_password_url = database_url.replace("postgres@", "postgres:db-pass-77f1@")
    try:
        with (
            caplog.at_level(logging.DEBUG),
            serve_in_thread(create_simtelegram()) as tg,
            serve_in_thread(create_billing(settings)) as billing,
        ):
            with httpx.Client(timeout=5, verify=verified()) as client:
                # httpx logs each request URL; a Bot API URL carries the token.
                me = client.post(f"{tg}/bot{BOT_TOKEN}/getMe")
                assert me.json()["ok"] is True
                client.get(
                    f"{billing}/readyz?password=hunter2-pass",
                    headers={"Authorization": f"Bearer {SECRETS['SWEEP_TOKEN']}"},
                )
                client.post(
                    f"{billing}/v1/sweep",
                    headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
                )
            log = logging.getLogger("gatehouse.test")
            log.debug("settings are %r", settings)
            log.info("calling %s", f"https://api.telegram.org/bot{BOT_TOKEN}/sendMessage")
            log.warning("connect failed for %s", db_password_url)
            try:
                raise ValueError(f"token {BOT_TOKEN} rejected by {SECRETS['SWEEP_TOKEN']}")
            except ValueError:
                log.exception("with a traceback")
    finally:
        root.removeHandler(handler)
        jsonlog.configure("tests", "WARNING")

    captured = stream.getvalue() + caplog.text + "".join(r.getMessage() for r in caplog.records)
    # The capture really saw the traffic: httpx's request lines and our own lines.
    assert "HTTP Request: POST" in captured
    assert "bot" + REDACTED in captured
    assert "with a traceback" in stream.getvalue()
    leaked = [
        name
        for name, value in {
            **SECRETS,
            "BOT_TOKEN": BOT_TOKEN,
            "DB_PASSWORD": "db-pass-77f1",
            "QUERY_PASSWORD": "hunter2-pass",
        }.items()
        if value in captured and name != "WAYFORPAY_MERCHANT_ACCOUNT"
    ]
    assert leaked == []
