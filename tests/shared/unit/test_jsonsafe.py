"""What jsonb cannot store is refused however the body spells it, with or without the walk
over the decoded value."""

from __future__ import annotations

import json

import pytest

from shared import jsonsafe

REFUSED = [
    (b'{"text": "a\\u0000b"}', "NUL"),
    (b'{"text": "a\\ud800"}', "surrogate"),
    # UTF-8's encoding of U+D800, which `json` decodes with surrogatepass: no escape in sight.
    (b'{"text": "a\xed\xa0\x80"}', "surrogate"),
    (b"[" * 64 + b"1" + b"]" * 64, "nested deeper"),
    (json.dumps({"text": "a\x00"}).encode("utf-16"), "NUL"),
]


@pytest.mark.parametrize(("raw", "why"), REFUSED)
def test_loads__refuses_what_jsonb_cannot_store(raw: bytes, why: str) -> None:
    with pytest.raises(jsonsafe.UnsafeJson, match=why):
        jsonsafe.loads(raw)


@pytest.mark.parametrize(
    "value",
    [
        {"update_id": 1, "message": {"text": "سلام", "chat": {"id": 5}}},
        # Hangul shares 0xED's lead byte with the surrogates: decoded, it is stored as it is.
        {"text": "\ud7a3 \ud55c"},
        [[[["deep but", "within the limit"]]]],
        {"text": "an escaped backslash \\u0000 is text"},
    ],
)
def test_loads__takes_what_jsonb_stores(value: object) -> None:
    raw = json.dumps(value, ensure_ascii=False).encode()
    assert jsonsafe.loads(raw) == value
    assert jsonsafe.storage_problem(value) is None
