"""The panel's 422s name the field and what is wrong with it, whether msgspec or a handler's
own rule refused it: the page shows each beside its field."""

from __future__ import annotations

import httpx
import pytest

from tests.panel_api.e2e.conftest import Panel


def refused(answer: httpx.Response) -> list[dict[str, str]]:
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    return list(answer.json()["errors"])


@pytest.mark.parametrize(
    ("price", "code"), [("abc", "bad-format"), ("0", "out-of-range"), (12, "wrong-type")]
)
def test_slot__a_bad_price_is_named_with_its_code(panel: Panel, price: object, code: str) -> None:
    slot = {"bot_id": panel.bot, "kind": "broadcast", "title": "Blast", "price": price}
    assert refused(panel.call("POST", "/v1/ad-slots", slot)) == [{"field": "price", "code": code}]


def test_slot__a_missing_title_and_an_unknown_bot(panel: Panel) -> None:
    untitled = {"bot_id": panel.bot, "kind": "broadcast", "price": "5"}
    assert refused(panel.call("POST", "/v1/ad-slots", untitled)) == [
        {"field": "title", "code": "required"}
    ]
    stranger = {"bot_id": 987654, "kind": "broadcast", "title": "Blast", "price": "5"}
    assert refused(panel.call("POST", "/v1/ad-slots", stranger)) == [
        {"field": "bot_id", "code": "not-found"}
    ]


def test_workspace__a_time_zone_nobody_has_and_a_tron_address_with_a_bad_checksum(
    panel: Panel,
) -> None:
    zone = panel.call("PATCH", "/v1/workspace", {"time_zone": "Mars/Olympus_Mons"})
    assert refused(zone) == [{"field": "time_zone", "code": "not-one-of"}]
    address = panel.call("PATCH", "/v1/workspace", {"tron_address": "T" + "1" * 33})
    assert refused(address)[0]["field"] == "tron_address"


def test_list__a_query_parameter_is_named_too(panel: Panel) -> None:
    assert refused(panel.call("GET", "/v1/people?limit=lots")) == [
        {"field": "limit", "code": "not-a-number"}
    ]
    assert refused(panel.call("GET", "/v1/people?limit=0")) == [
        {"field": "limit", "code": "out-of-range"}
    ]


def test_content__a_nul_in_its_text_is_named_and_nothing_is_written(panel: Panel) -> None:
    content = {"bot_id": panel.bot, "code": "nul", "kind": "text", "body": "a\x00b"}
    assert refused(panel.call("POST", "/v1/contents", content)) == [
        {"field": "body", "code": "bad-format"}
    ]
    assert refused(panel.call("GET", "/v1/people?q=a%00")) == [{"field": "q", "code": "bad-format"}]
    listed = panel.call("GET", f"/v1/contents?bot_id={panel.bot}")
    assert listed.status_code == 200
    assert all(item["code"] != "nul" for item in listed.json()["items"])
