"""Files uploaded with a Bot API call, made when the call is sent.

Outbox rows stay JSON: a file to upload is described under `_upload` in the payload, field by
field (`{"photo": {"qr": "T..."}}` is a QR code of that text as PNG), and its bytes are made
again at each send. A description this module cannot make is a bad row, not a retry.
"""

from __future__ import annotations

import io
from typing import Any

import segno

UPLOAD = "_upload"
# A QR code's text: a TRON address is 34 characters; far longer would make an unreadable code.
QR_MAX = 512

File = tuple[str, bytes, str]


class BadUpload(ValueError):
    """The row describes a file that cannot be made."""


def qr_png(text: str) -> bytes:
    """A QR code of `text`, medium error correction, 10 px modules with the quiet zone."""
    buffer = io.BytesIO()
    segno.make(text, error="m", micro=False).save(buffer, kind="png", scale=10, border=4)
    return buffer.getvalue()


def qr_photo(text: str) -> dict[str, Any]:
    """The payload part that uploads a QR code of `text` as `photo`."""
    return {UPLOAD: {"photo": {"qr": text}}}


def split(payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, File]]:
    """The call's plain parameters and the files to upload with them."""
    spec = payload.get(UPLOAD)
    if spec is None:
        return payload, {}
    if not isinstance(spec, dict) or not spec:
        raise BadUpload("_upload must name at least one field")
    params = {key: value for key, value in payload.items() if key != UPLOAD}
    files: dict[str, File] = {}
    for field, what in spec.items():
        text = what.get("qr") if isinstance(what, dict) else None
        if not isinstance(text, str) or not 0 < len(text) <= QR_MAX:
            raise BadUpload(f"cannot make {field!r} from {str(what)[:100]!r}")
        files[str(field)] = (f"{field}.png", qr_png(text), "image/png")
    return params, files
