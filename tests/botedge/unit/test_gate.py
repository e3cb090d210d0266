"""The gate's decisions: who counts as a member, what a refusal means, the joined cache, and
which route an update takes."""

from __future__ import annotations

import uuid

import pytest

from botedge.errors import RetryLater
from botedge.gate import (
    Check,
    Content,
    ContentCache,
    Gate,
    GateChannel,
    JoinedCache,
    JoinState,
    is_member,
    join_state_of,
)
from botedge.handlers import BotLogic
from botedge.routing import Routes, Settled, start_payload
from botedge.telegram import BadRequest, Forbidden, ServerError, TooManyRequests
from botedge.text import escape_html
from botedge.updates import InboxRow
from shared.clock import ManualClock


@pytest.mark.parametrize(
    ("member", "expected"),
    [
        ({"status": "creator"}, True),
        ({"status": "administrator"}, True),
        ({"status": "member"}, True),
        ({"status": "restricted", "is_member": True}, True),
        ({"status": "restricted", "is_member": False}, False),
        ({"status": "left"}, False),
        ({"status": "kicked"}, False),
        ({}, False),
        (None, False),
    ],
)
def test_is_member__telegrams_rule(member: object, expected: bool) -> None:
    assert is_member(member) is expected


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (BadRequest(400, "Bad Request: user not found"), JoinState.MISSING),
        (BadRequest(400, "Bad Request: member list is inaccessible"), JoinState.UNKNOWN),
        (BadRequest(400, "Bad Request: CHAT_ADMIN_REQUIRED"), JoinState.UNKNOWN),
        (BadRequest(400, "Bad Request: chat not found"), JoinState.UNKNOWN),
        (Forbidden(403, "Forbidden: bot is not a member of the channel chat"), JoinState.UNKNOWN),
        (BadRequest(400, "Bad Request: PARTICIPANT_ID_INVALID"), None),
    ],
)
def test_standing_of__what_a_refusal_says(error: BadRequest, expected: JoinState | None) -> None:
    assert join_state_of(error) is expected


def test_standing_of__telegram_unreachable_retries_with_its_retry_after() -> None:
    with pytest.raises(RetryLater):
        join_state_of(ServerError(0, "getChatMember: timed out"))
    with pytest.raises(RetryLater) as raised:
        join_state_of(TooManyRequests(429, "Too Many Requests", retry_after=7))
    assert raised.value.retry_after == 7


def test_joined_cache__five_minutes_then_asked_again_and_a_notice_forgets() -> None:
    clock = ManualClock()
    cache = JoinedCache(clock=clock)
    cache.remember(-100, 7)
    cache.remember(-100, 8)
    assert cache.joined(-100, 7)
    clock.advance(299)
    assert cache.joined(-100, 7)
    cache.forget("-100:7")
    assert not cache.joined(-100, 7)
    assert cache.joined(-100, 8)
    clock.advance(1)
    assert not cache.joined(-100, 8)
    cache.forget("not a notice")  # ignored, not raised


PROMO = (
    Content(5, "text", "The secret", None, None, None, None, True),
    (GateChannel(1, -100, "News", None),),
)


def test_content_cache__kept_a_minute_and_emptied_by_a_notice() -> None:
    clock = ManualClock()
    cache = ContentCache(lambda: True, clock=clock)
    assert cache.get((1, "promo", 0)) == (False, None)
    cache.put((1, "promo", 0), PROMO, cache.generation)
    cache.put((1, "nope", 0), None, cache.generation)
    assert cache.get((1, "promo", 0)) == (True, PROMO)
    # A made-up code is remembered as not found.
    assert cache.get((1, "nope", 0)) == (True, None)
    clock.advance(59)
    assert cache.get((1, "promo", 0)) == (True, PROMO)
    cache.clear("")
    assert cache.get((1, "promo", 0)) == (False, None)
    cache.put((1, "promo", 0), PROMO, cache.generation)
    clock.advance(60)
    assert cache.get((1, "promo", 0)) == (False, None)


def test_content_cache__a_read_begun_before_a_notice_is_not_kept() -> None:
    cache = ContentCache(lambda: True, clock=ManualClock())
    began = cache.generation
    cache.clear("")  # the content changed while the read was under way
    cache.put((1, "promo", 0), PROMO, began)
    assert cache.get((1, "promo", 0)) == (False, None)


def test_content_cache__nothing_kept_or_served_while_notices_cannot_arrive() -> None:
    listening = [True]
    cache = ContentCache(lambda: listening[0], clock=ManualClock())
    cache.put((1, "promo", 0), PROMO, cache.generation)
    listening[0] = False
    assert cache.get((1, "promo", 0)) == (False, None)
    cache.put((1, "other", 0), PROMO, cache.generation)
    listening[0] = True
    assert cache.get((1, "other", 0)) == (False, None)


def test_content_cache__starts_over_past_its_limit() -> None:
    cache = ContentCache(lambda: True, clock=ManualClock(), limit=3)
    for n in range(3):
        cache.put((1, f"code{n}", 0), None, cache.generation)
    cache.put((1, "code3", 0), PROMO, cache.generation)
    assert cache.get((1, "code0", 0)) == (False, None)
    assert cache.get((1, "code3", 0)) == (True, PROMO)


def row(kind: str, body: dict[str, object]) -> InboxRow:
    return InboxRow(1, 1, 1, 7, kind, {kind: body}, 1, uuid.uuid4())


class Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    async def prepare(self, *args: object) -> None:
        return None

    async def apply(self, *args: object) -> list[object]:
        return []


def test_dispatch__starts_exact_or_by_prefix_commands_messages_callbacks_kinds() -> None:
    gate, ads, pay, press, members, shop, text = (
        Marker(n) for n in ("gate", "ads", "pay", "press", "cm", "shop", "text")
    )

    class Features:
        def register(self, routes: Routes) -> None:
            routes.starts["ads"] = ads
            routes.start_prefixes.update({"": gate, "pay_": pay})
            routes.commands["/ads"] = shop
            routes.messages = text
            routes.callbacks["gate:"] = press
            routes.kinds["chat_member"] = members

    logic = BotLogic(features=[Features()])
    private = {"type": "private", "id": 7}

    def start(text: str) -> tuple[str, str] | None:
        found = logic.route(row("message", {"chat": private, "text": text}))
        return None if found is None else (found[0].name, found[1])  # type: ignore[attr-defined]

    assert start("/start promo") == ("gate", "promo")
    assert start("/start ads") == ("ads", "")
    # A content code that merely begins with a reserved word is content.
    assert start("/start adsfree") == ("gate", "adsfree")
    assert start("/start pay_12") == ("pay", "12")
    assert start("/start") is None  # the welcome
    assert start("/ads") == ("shop", "")
    assert start("/ADS@my_bot now") == ("shop", "now")
    assert start("/help") is None  # no route: the default answer
    assert start("hello") == ("text", "")
    in_group_text = row("message", {"chat": {"type": "group", "id": -5}, "text": "hello"})
    assert logic.route(in_group_text) is None
    in_group = row("message", {"chat": {"type": "group", "id": -5}, "text": "/start promo"})
    assert logic.route(in_group) is None
    pressed = logic.route(row("callback_query", {"data": "gate:12"}))
    assert pressed is not None and pressed[0] is press and pressed[1] == "12"
    assert logic.route(row("callback_query", {"data": "other:1"})) is None
    changed = logic.route(row("chat_member", {}))
    assert changed is not None and changed[0] is members


def test_start_payload__only_in_private_chats() -> None:
    assert start_payload({"chat": {"type": "private"}, "text": "/start abc"}) == "abc"
    assert start_payload({"chat": {"type": "private"}, "text": "/start@my_bot abc"}) == "abc"
    assert start_payload({"chat": {"type": "private"}, "text": "/starting"}) is None
    assert start_payload({"chat": {"type": "channel"}, "text": "/start abc"}) is None


def test_escape_html__the_four_characters_only() -> None:
    assert escape_html('Tom & <Jerry> "x"') == "Tom &amp; &lt;Jerry&gt; &quot;x&quot;"
    assert escape_html("it's ☕ ok") == "it's ☕ ok"


def test_settle__the_gate_shown_and_an_unknown_code_need_no_transaction_the_rest_do() -> None:
    """Settled updates are finished by one statement that records the person with them."""
    logic = BotLogic(features=[Gate(None, JoinedCache())], clock=ManualClock())  # type: ignore[arg-type]
    visitor = {"id": 42, "first_name": "Sara", "is_bot": False}
    start = row(
        "message", {"chat": {"type": "private", "id": 7}, "from": visitor, "text": "/start promo"}
    )
    found = logic.route(start)
    assert found is not None
    route, arg = found
    content, channels = PROMO
    news = channels[0]

    def settle(check: Check) -> Settled | None:
        return logic.settle(start, (route, arg, check))

    shown = settle(Check(content, missing=(news,)))
    assert shown is not None
    [gate] = shown.replies
    assert gate.counted is not None and gate.counted.kind == "gate_shown"
    # Counted before the person is known: the finish gives it the person it records.
    assert gate.counted.person_id is None
    person = shown.person
    assert person is not None and person["telegram_user_id"] == 42 and person["counted"] == "start"
    unknown_code = settle(Check(None))
    assert unknown_code is not None and unknown_code.replies[0].payload["text"]
    # A channel that could not be asked is flagged, and the content is delivered once: both
    # write, so both go through `apply` in a transaction.
    assert settle(Check(content, missing=(news,), unknown=((news, "chat not found"),))) is None
    assert settle(Check(content)) is None
