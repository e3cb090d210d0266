"""The two subclasses of uvicorn's `HttpToolsProtocol` (the read deadline in
`shared.protocol`, the simulated Telegram's fast path) rely on parts of it that are not a
public interface. These fail loudly on a uvicorn that moved them; docs/testing.md says what to
check before moving the pin."""

from __future__ import annotations

import inspect
import re
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

from uvicorn.protocols.http import httptools_impl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from shared import protocol
from simulators.telegram import fastpath

ROOT = Path(__file__).resolve().parents[3]
SOURCE = inspect.getsource(httptools_impl)

# The protocol's methods the subclasses override or call.
METHODS = (
    "connection_made",
    "connection_lost",
    "data_received",
    "on_message_begin",
    "on_headers_complete",
    "on_body",
    "on_message_complete",
    "on_response_complete",
)


def _used(source: Any, prefix: str) -> set[str]:
    """The attributes read or set on `prefix` in a module's or a class's source."""
    pattern = rf"{re.escape(prefix)}\.([a-z_][a-z0-9_]*)"
    return set(re.findall(pattern, inspect.getsource(source)))


def test_uvicorn__is_the_version_pinned_in_pyproject() -> None:
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"uvicorn=={version('uvicorn')}" in pins


def test_protocol__still_has_every_method_the_subclasses_override_or_call() -> None:
    missing = [name for name in METHODS if not callable(getattr(HttpToolsProtocol, name, None))]
    assert missing == []


def test_protocol__still_sets_every_attribute_the_subclasses_read() -> None:
    ours = _used(protocol, "self") | _used(fastpath._BotApiProtocol, "self")
    ours -= {"world", "ticks"}
    ours = {name for name in ours if not name.startswith("_")}
    kept = _used(httptools_impl, "self")
    assert ours - kept - set(METHODS) == set()


def test_fast_path_call__has_every_field_the_protocol_reads_or_sets_on_its_cycle() -> None:
    # The fast path puts its own call where uvicorn's request cycle would be.
    touched = set(re.findall(r"self\.cycle\.([a-z_]+)", SOURCE))
    assert touched, "uvicorn no longer keeps its request cycle in self.cycle"
    assert touched <= set(fastpath._BotCall.__slots__)


def test_status_line__still_maps_each_status_to_its_whole_line() -> None:
    assert httptools_impl.STATUS_LINE[200] == b"HTTP/1.1 200 OK\r\n"
    assert httptools_impl.STATUS_LINE[429].startswith(b"HTTP/1.1 429 ")
