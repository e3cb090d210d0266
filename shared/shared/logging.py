"""JSON log lines with a request id on each, and secrets redacted before any handler sees them.

Redaction happens in the log record factory, so it covers every logger (httpx logs each request
URL at INFO, and a Bot API URL carries the bot token), every handler and every formatter,
pytest's capture included. Exception text is redacted again by the formatter.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime as dt
import json
import logging
import re
import sys
import threading
from collections.abc import Iterable
from typing import Any

from shared.settings import Secret

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)

REDACTED = "[REDACTED]"

# Shapes of secrets worth catching even when nobody registered their value.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Bot API URL segment: /bot123456:AA...; also a bare token.
    (re.compile(r"\bbot\d{3,}:[A-Za-z0-9_-]{20,}"), "bot" + REDACTED),
    (re.compile(r"\b\d{5,}:[A-Za-z0-9_-]{30,}"), REDACTED),
    # JSON Web Tokens.
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"), REDACTED),
    # Authorization headers and schemes.
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED),
    # key=value and "key": "value" pairs whose key names a secret.
    (
        re.compile(
            r"(?i)(\"?\b(?:password|passwd|secret|token|api[_-]?key|apikey|signature|"
            r"authorization|merchantsignature|secret[_-]token)\"?\s*[:=]\s*\"?)([^\s\"&,;}]+)"
        ),
        r"\1" + REDACTED,
    ),
    # Stripe and similar prefixed keys.
    (re.compile(r"\b(whsec|sk_live|sk_test|rk_live|rk_test)_[A-Za-z0-9]{8,}"), REDACTED),
    # Passwords inside connection URLs: scheme://user:password@host.
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]+:)([^@\s]+)@"), r"\1" + REDACTED + "@"),
)

_known_lock = threading.Lock()
_known_values: set[str] = set()
_process_name = "gatehouse"


def register_secrets(secrets: Iterable[Secret | str | None]) -> None:
    """Remember exact secret values so they are redacted whatever their shape."""
    with _known_lock:
        for secret in secrets:
            if secret is None:
                continue
            value = secret.reveal() if isinstance(secret, Secret) else secret
            # Very short values would redact ordinary words; settings demand longer secrets.
            if len(value) >= 6:
                _known_values.add(value)


def redact(text: str) -> str:
    for value in sorted(_known_values, key=len, reverse=True):
        if value in text:
            text = text.replace(value, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


_base_factory = logging.getLogRecordFactory()
_plain = logging.Formatter()


def _redacting_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
    record = _base_factory(*args, **kwargs)
    try:
        message = record.getMessage()
    except Exception:  # a malformed call must not lose the line
        message = f"{record.msg!r} % {record.args!r}"
    record.msg = redact(message)
    record.args = None
    if record.exc_info and record.exc_info[0] is not None:
        # Formatters reuse exc_text when it is set, so the traceback is redacted for all.
        record.exc_text = redact(_plain.formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
    record.request_id = request_id.get()
    return record


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, process name, logger, message, request id."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "process": _process_name,
            "pid": record.process,
            "logger": record.name,
            "msg": redact(record.getMessage()),
        }
        rid = getattr(record, "request_id", None)
        if rid:
            line["request_id"] = rid
        for key in ("event", "update_id", "bot_id", "status", "duration_ms", "method", "path"):
            value = record.__dict__.get(key)
            if value is not None:
                line[key] = value
        if record.exc_info or record.exc_text:
            text = record.exc_text or self.formatException(record.exc_info)  # type: ignore[arg-type]
            line["exc"] = redact(text)
        return json.dumps(line, default=str, ensure_ascii=False)


class _ShutdownCancellations(logging.Filter):
    """uvicorn reports requests it cancels at the shutdown deadline as errors, with a
    CancelledError traceback. They are the deadline doing its job: a warning, no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        cancelled = bool(record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))
        if cancelled or "timeout graceful shutdown exceeded" in record.getMessage():
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            if cancelled:
                record.msg, record.args = "request task cancelled at the shutdown deadline", None
                record.exc_info, record.exc_text = None, None
        return True


def install_redaction() -> None:
    """Redact every record at creation; idempotent."""
    if logging.getLogRecordFactory() is not _redacting_factory:
        logging.setLogRecordFactory(_redacting_factory)


def configure(
    process_name: str, level: str = "INFO", secrets: Iterable[Secret | None] = ()
) -> None:
    """Send JSON lines to stderr for every logger, with redaction in front of all of them."""
    global _process_name
    _process_name = process_name
    register_secrets(secrets)
    install_redaction()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        if isinstance(existing.formatter, JsonFormatter):
            root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    server_log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _ShutdownCancellations) for f in server_log.filters):
        server_log.addFilter(_ShutdownCancellations())
    # Libraries chatty at DEBUG stay at INFO unless the whole process asks for DEBUG.
    quiet = "DEBUG" if level == "DEBUG" else "WARNING"
    for name in ("httpcore", "hpack", "psycopg.pool"):
        logging.getLogger(name).setLevel(quiet)
