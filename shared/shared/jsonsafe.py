"""What PostgreSQL's jsonb refuses that JSON allows: the NUL character (\\u0000)."""

from __future__ import annotations

from typing import Any


def contains_nul(value: Any) -> bool:
    """True when any string (or key) in a decoded JSON value holds a NUL character."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(contains_nul(k) or contains_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(contains_nul(item) for item in value)
    return False
