"""JSON that PostgreSQL's jsonb will take: decoded strictly, so a bad body is refused up front.

Python's `json` accepts what jsonb refuses or what cannot be stored as written: `NaN` and
`Infinity`, numbers that overflow a float (`1e400` becomes infinity), integers past Python's
digit limit, lone UTF-16 surrogates (`"\\ud800"`), the NUL character, and nesting deep enough to
exhaust the recursion limit. `loads` turns every one of them into `UnsafeJson`, a ValueError.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# No real caller nests this deep; jsonb and our code stay far from their stack limits.
MAX_DEPTH = 64

_SURROGATE = re.compile("[\ud800-\udfff]")


class UnsafeJson(ValueError):
    """The body is not JSON, or not JSON that jsonb can store as it was written."""


def _no_constant(name: str) -> Any:
    raise UnsafeJson(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise UnsafeJson(f"number {text[:40]} is out of range")
    return value


def loads(raw: bytes | str, *, numbers_as_text: bool = False) -> Any:
    """Decode strictly; with `numbers_as_text`, numbers stay the text they were written as."""
    try:
        value = json.loads(
            raw,
            parse_constant=_no_constant,
            parse_float=str if numbers_as_text else _finite,
            parse_int=str if numbers_as_text else int,
        )
    except UnsafeJson:
        raise
    except RecursionError:
        raise UnsafeJson("nested too deeply") from None
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, int digit limit
        raise UnsafeJson(f"not valid JSON: {str(error)[:200]}") from None
    problem = None if _plainly_storable(raw) else storage_problem(value)
    if problem is not None:
        raise UnsafeJson(problem)
    return value


def _plainly_storable(raw: bytes | str) -> bool:
    """Whether UTF-8 text alone shows its decoded value needs no walk (a webhook's update took
    one on every call): NUL and lone surrogates come only from `\\u` escapes or, as `json`
    decodes bytes with `surrogatepass`, from UTF-8 lead byte 0xED; and with fewer brackets than
    MAX_DEPTH, nothing inside is deeper than it."""
    return (
        isinstance(raw, bytes)
        and json.detect_encoding(raw) == "utf-8"
        and b"\\u" not in raw
        and b"\xed" not in raw
        and raw.count(b"{") + raw.count(b"[") < MAX_DEPTH
    )


def storage_problem(value: Any) -> str | None:
    """Why jsonb would refuse a decoded value (or our depth limit would), or None."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels"
        if isinstance(item, str):
            if (problem := _text_problem(item)) is not None:
                return problem
        elif isinstance(item, dict):
            stack.extend((key, depth) for key in item)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return None


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character"
    if _SURROGATE.search(text):
        return "contains a lone UTF-16 surrogate"
    return None


def unstorable_text(value: Any, path: str = "") -> str | None:
    """The path (`plan.title`, `ids[3]`) of the first string PostgreSQL's text cannot hold (a
    NUL character or a lone surrogate), or None. Keys count as the object they are in."""
    if isinstance(value, str):
        return None if _text_problem(value) is None else path
    if isinstance(value, dict):
        for key, child in value.items():
            if unstorable_text(key) is not None:
                return path or str(key).replace("\x00", "")
            found = unstorable_text(child, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found = unstorable_text(child, f"{path}[{index}]")
            if found is not None:
                return found
    return None
