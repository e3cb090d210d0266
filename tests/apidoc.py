"""docs/api.md, written from the three services' OpenAPI documents (the ones `GET
/openapi.json` serves), so the reference cannot drift from the routes: `make docs` writes it,
and a test fails when the file differs from what this writes.

    python -m tests.apidoc [--write docs/api.md]
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from billing.app import OPERATIONS as BILLING
from billing.app import SECURITY as BILLING_SECURITY
from botedge.app import OPERATIONS as BOTEDGE
from botedge.app import SECURITY as BOTEDGE_SECURITY
from panel_api.contract import openapi as panel_openapi
from shared.openapi import document

ROOT = Path(__file__).resolve().parents[1]
PATH = ROOT / "docs" / "api.md"


def documents() -> list[tuple[str, str, dict[str, Any]]]:
    """Each service: its name, default port and OpenAPI document."""
    release = version("gatehouse")
    return [
        ("panel-api", "8003", panel_openapi(release)),
        ("billing", "8001", document("Gatehouse billing", release, BILLING, BILLING_SECURITY)),
        ("botedge api", "8002", document("Gatehouse botedge", release, BOTEDGE, BOTEDGE_SECURITY)),
    ]


def _type(schema: dict[str, Any], components: dict[str, Any]) -> str:
    """A schema in a few words: `integer`, `string (date-time)`, `list of Plan`, `A | B`."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(_type(option, components) for option in schema["anyOf"])
    if "enum" in schema:
        return " | ".join(f"`{value}`" for value in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}), components)}"
    if kind == "object" and "additionalProperties" in schema:
        return f"map of {_type(schema['additionalProperties'], components)}"
    shown = str(kind)
    if "format" in schema:
        shown += f" ({schema['format']})"
    limits = [
        f"{word} {schema[key]}"
        for key, word in (
            ("minimum", ">="),
            ("maximum", "<="),
            ("minLength", "length >="),
            ("maxLength", "length <="),
        )
        if key in schema
    ]
    return f"{shown}, {', '.join(limits)}" if limits else shown


def _fields(schema: dict[str, Any], components: dict[str, Any]) -> list[str]:
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[-1]]
    required = set(schema.get("required", ()))
    return [
        f"`{name}`{'' if name in required else '?'}: {_type(prop, components)}"
        for name, prop in schema.get("properties", {}).items()
    ]


def _operation(method: str, path: str, op: dict[str, Any], components: dict[str, Any]) -> list[str]:
    lines = [f"#### `{method.upper()} {path}`", "", op.get("summary", ""), ""]
    security = [name for requirement in op.get("security", []) for name in requirement]
    if "x-least-role" in op:
        lines.append(f"- Who: a signed-in member, `{op['x-least-role']}` or above")
    elif security:
        lines.append(f"- Who: {', '.join(f'`{name}`' for name in security)}")
    else:
        lines.append("- Who: anyone")
    for parameter in op.get("parameters", []):
        where = parameter["in"]
        need = "" if parameter.get("required") else "?"
        lines.append(
            f"- {where} `{parameter['name']}`{need}: {_type(parameter['schema'], components)}"
        )
    body = op.get("requestBody", {}).get("content", {}).get("application/json")
    if body is not None:
        fields = _fields(body["schema"], components)
        lines.append(f"- Body: {'; '.join(fields) if fields else 'JSON'}")
    for rule in op.get("x-rules", []):
        lines.append(f"- Refused with 422 unless: {rule}")
    answers = []
    for status, answer in op["responses"].items():
        content = answer.get("content", {})
        media = next(iter(content), "")
        if int(status) < 400 and media:
            answers.append(f"{status} {_type(content[media]['schema'], components)}")
        else:
            answers.append(status)
    lines += [f"- Answers: {', '.join(answers)}", ""]
    return lines


def render() -> str:
    lines = [
        "# The HTTP API",
        "",
        "Written by `make docs` from each service's OpenAPI document (`GET /openapi.json` on "
        "the service serves the same, with every schema in full); a test fails when this file "
        "and the routes differ. Errors are problem+json ([errors.md](errors.md)); a `?` marks "
        "what may be left out.",
        "",
    ]
    for name, port, doc in documents():
        components = doc["components"]["schemas"]
        lines += [f"## {name} (port {port})", ""]
        for path, item in doc["paths"].items():
            for method, op in item.items():
                lines += _operation(method, path, op, components)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.apidoc")
    parser.add_argument("--write", type=Path, help="write it there (else print it)")
    args = parser.parse_args(argv)
    text = render()
    if args.write:
        args.write.write_text(text)
        print(f"written: {args.write}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
