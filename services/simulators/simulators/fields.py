"""The fields of a simulator's control call: a JSON object, or the form fields `curl -d`
sends, so that a walk in a shell script needs no JSON quoting."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from shared import jsonsafe
from shared.errors import Problem

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


async def fields(request: Request) -> dict[str, Any]:
    if request.headers.get("content-type", "").startswith(FORM_TYPES):
        async with request.form(max_files=0) as form:
            return {key: value for key, value in form.items() if isinstance(value, str)}
    return json_fields(await request.body())


def json_fields(raw: bytes) -> dict[str, Any]:
    """The fields of a JSON body (none for an empty one); Problem 400 for anything else."""
    if not raw.strip():
        # `curl -X POST` with nothing to say: no fields.
        return {}
    try:
        body = jsonsafe.loads(raw)
    except jsonsafe.UnsafeJson:
        raise Problem(400, "malformed-json", "the body is neither JSON nor form fields") from None
    if not isinstance(body, dict):
        raise Problem(400, "malformed-json", "the body is not a JSON object")
    return body
