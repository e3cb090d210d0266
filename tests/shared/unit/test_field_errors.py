"""A 422's `errors`: msgspec's own messages, from real decodes, read as a field and a code."""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Literal

import msgspec
import pytest

from shared.errors import FIELD_CODES, FieldError, Problem, decode_json
from tests.conftest import ROOT


class Plan(msgspec.Struct, forbid_unknown_fields=True):
    price: Annotated[str, msgspec.Meta(pattern=r"^[0-9]{1,9}(\.[0-9]{1,2})?$")]
    days: Annotated[int, msgspec.Meta(ge=1, le=365)] = 30
    title: Annotated[str, msgspec.Meta(min_length=1, max_length=8)] = "Plan"
    currency: Literal["USD", "JPY"] = "USD"
    until: dt.datetime | None = None


class Body(msgspec.Struct, forbid_unknown_fields=True):
    plan: Plan
    ids: list[int] = []


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ('{"plan": {}}', "plan.price", "required"),
        ('{"plan": {"price": null}}', "plan.price", "required"),
        ('{"plan": {"price": "1"}, "extra": 1}', "extra", "unknown"),
        ('{"plan": {"price": 5}}', "plan.price", "wrong-type"),
        ('{"plan": {"price": "1", "days": "3"}}', "plan.days", "not-a-number"),
        ('{"plan": {"price": "1", "title": ""}}', "plan.title", "too-short"),
        ('{"plan": {"price": "1", "title": "123456789"}}', "plan.title", "too-long"),
        ('{"plan": {"price": "1", "days": 0}}', "plan.days", "out-of-range"),
        ('{"plan": {"price": "1", "days": 366}}', "plan.days", "out-of-range"),
        ('{"plan": {"price": "1", "days": 1e400}}', "plan.days", "out-of-range"),
        ('{"plan": {"price": "12.345"}}', "plan.price", "bad-format"),
        ('{"plan": {"price": "1", "until": "tomorrow"}}', "plan.until", "bad-format"),
        ('{"plan": {"price": "1", "currency": "KWD"}}', "plan.currency", "not-one-of"),
        ('{"plan": {"price": "1"}, "ids": [1, "two"]}', "ids[1]", "not-a-number"),
        ("[]", "", "wrong-type"),
    ],
)
def test_decode_json__a_refused_body_names_its_field_and_code(
    body: str, field: str, code: str
) -> None:
    with pytest.raises(Problem) as refused:
        decode_json(body.encode(), Body)
    assert refused.value.status == 422
    assert refused.value.extra["errors"] == [FieldError(field, code)]  # type: ignore[arg-type]


def test_field_codes__the_docs_list_every_code_and_no_other() -> None:
    docs = (ROOT / "docs/errors.md").read_text()
    section = docs.split("## Which field, and what is wrong with it", 1)[1]
    documented = re.findall(r"^\| `([a-z-]+)` \|", section, re.M)
    assert documented == list(FIELD_CODES)
