"""The fields of a simulator's control call: a JSON object, or the form fields `curl -d`
sends, so that a walk in a shell script needs no JSON quoting."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


async def fields(request: Request) -> dict[str, Any]:
    if request.headers.get("content-type", "").startswith(FORM_TYPES):
        async with request.form(max_files=0) as form:
            return {key: value for key, value in form.items() if isinstance(value, str)}
    body: dict[str, Any] = await request.json()
    return body
