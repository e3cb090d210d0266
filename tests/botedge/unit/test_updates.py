from __future__ import annotations

import pytest

from botedge.updates import MalformedUpdate, parse


def test_parse__message_keyed_by_chat() -> None:
    update = parse({"update_id": 5, "message": {"chat": {"id": 42}, "text": "hi"}})
    assert (update.update_id, update.kind, update.chat_key) == (5, "message", 42)


@pytest.mark.parametrize(
    ("payload", "kind", "key"),
    [
        ({"callback_query": {"from": {"id": 7}, "id": "q"}}, "callback_query", 7),
        (
            {"chat_member": {"chat": {"id": -100}, "new_chat_member": {"user": {"id": 8}}}},
            "chat_member",
            8,
        ),
        ({"my_chat_member": {"chat": {"id": 9}}}, "my_chat_member", 9),
        ({"chat_join_request": {"from": {"id": 10}}}, "chat_join_request", 10),
        ({"pre_checkout_query": {"from": {"id": 11}, "id": "p"}}, "pre_checkout_query", 11),
        (
            {"subscription": {"user": {"id": 12}, "invoice_payload": "gh_a", "state": "canceled"}},
            "subscription",
            12,
        ),
    ],
)
def test_parse__kinds_and_their_person(payload: dict[str, object], kind: str, key: int) -> None:
    update = parse({"update_id": 1, **payload})
    assert (update.kind, update.chat_key) == (kind, key)


def test_parse__other_kinds_are_not_acted_on() -> None:
    assert parse({"update_id": 1, "edited_message": {"chat": {"id": 1}}}).kind is None


@pytest.mark.parametrize(
    "payload",
    [
        [],
        {"message": {}},
        {"update_id": 0, "message": {"chat": {"id": 1}}},
        {"update_id": "5", "message": {"chat": {"id": 1}}},
        {"update_id": True},
        {"update_id": 3, "message": {"chat": {"id": "x"}}},
        {"update_id": 3, "callback_query": {"id": "q"}},
        {"update_id": 3, "message": {"chat": {"id": 1}, "text": "nul \u0000 here"}},
    ],
)
def test_parse__malformed(payload: object) -> None:
    with pytest.raises(MalformedUpdate):
        parse(payload)


def test_parse__a_typed_backslash_u_is_ordinary_text() -> None:
    update = parse({"update_id": 4, "message": {"chat": {"id": 1}, "text": "\\u0000"}})
    assert update.kind == "message"
