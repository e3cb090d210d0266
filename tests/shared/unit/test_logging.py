from __future__ import annotations

import json
import logging

import pytest

from shared import logging as jsonlog
from shared.logging import REDACTED, JsonFormatter, redact, register_secrets, request_id

BOT_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"POST https://api.telegram.org/bot{BOT_TOKEN}/sendMessage", BOT_TOKEN),
        (f"token {BOT_TOKEN} rejected", BOT_TOKEN),
        ("Authorization: Bearer abcdef0123456789xyz", "abcdef0123456789xyz"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlX2hlcmU", "c2lnbmF0dXJl"),
        ('{"password": "pa55word!x"}', "pa55word!x"),
        ("login?password=pa55word&user=a", "pa55word"),
        ("api_key=k3y-v4lue-123", "k3y-v4lue-123"),
        ("secret whsec_abcdef0123456789 used", "whsec_abcdef0123456789"),
        ("postgresql://app:s3cretpw@db:5432/x", "s3cretpw"),
    ],
)
def test_redact__removes_secret_shapes(text: str, secret: str) -> None:
    assert secret not in redact(text)
    assert REDACTED in redact(text)


def test_redact__registered_values_whatever_their_shape() -> None:
    register_secrets(["plain-looking-value-42"])
    assert "plain-looking-value-42" not in redact("we saw plain-looking-value-42 here")


def test_redact__leaves_ordinary_text() -> None:
    assert redact("applied migration 0001_workspace.sql") == (
        "applied migration 0001_workspace.sql"
    )


def test_record_factory__redacts_arguments_before_handlers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    jsonlog.install_redaction()
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("httpx").info(
            'HTTP Request: %s %s "%s"', "POST", f"https://x/bot{BOT_TOKEN}/getMe", "200 OK"
        )
    assert BOT_TOKEN not in caplog.text
    assert all(BOT_TOKEN not in r.getMessage() for r in caplog.records)


def test_json_formatter__one_object_with_request_id_and_process() -> None:
    jsonlog.install_redaction()
    token = request_id.set("req-1")
    try:
        record = logging.getLogger("t").makeRecord("t", logging.INFO, "f", 1, "hi %s", ("x",), None)
    finally:
        request_id.reset(token)
    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "hi x"
    assert line["request_id"] == "req-1"
    assert line["level"] == "INFO"
    assert "process" in line
