"""Telegram failing for one bot: its breaker opens, its replies wait in the outbox without
being retried hot, the other bots' go out untouched, and once Telegram answers again every
parked reply goes out once, in each chat's order."""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

from botedge.words import FSI, PDI
from tests.botedge.conftest import message
from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP, WrittenDown
from tests.scale import sized

DOWN, UP = 8201, 8202
PEOPLE, PER_PERSON = 20, 5


def deliver(edge: Edge, bot_id: int, secret: str, first_person: int) -> None:
    """As Telegram does: each chat's updates one after another."""
    assert edge.api is not None
    url = f"{edge.api.url}/telegram/{bot_id}/webhook"
    headers = {"X-Telegram-Bot-Api-Secret-Token": secret}
    for n in range(PER_PERSON):
        for p in range(PEOPLE):
            person = first_person + p
            update = message(person * 100 + n + 1, person, f"p{person}-m{n}")
            assert HTTP.post(url, json=update, headers=headers, timeout=10).status_code == 200


def sent_by_chat(edge: Edge, bot_telegram_id: int) -> dict[int, list[str]]:
    by_chat: dict[int, list[str]] = defaultdict(list)
    for row in edge.sim_get("/_sim/sent", bot_id=bot_telegram_id):
        by_chat[row["chat_id"]].append(row["text"])
    return by_chat


def all_replied(edge: Edge, bot_telegram_id: int) -> bool:
    return sum(map(len, sent_by_chat(edge, bot_telegram_id).values())) == PEOPLE * PER_PERSON


def assert_once_in_order(edge: Edge, bot_telegram_id: int, first_person: int) -> None:
    by_chat = sent_by_chat(edge, bot_telegram_id)
    assert len(by_chat) == PEOPLE
    for person in range(first_person, first_person + PEOPLE):
        expected = [
            f'I did not understand "{FSI}p{person}-m{n}{PDI}". Send /start to begin.'
            for n in range(PER_PERSON)
        ]
        assert by_chat[person] == expected, person


@pytest.mark.slow(20)
@pytest.mark.scaled
def test_one_bot_answering_502__parked_then_sent_once_in_order_others_untouched(
    edge: Edge, written_down: WrittenDown
) -> None:
    outage = sized(15, 60)
    down_id, _, down_secret = edge.add_bot(DOWN)
    up_id, _, up_secret = edge.add_bot(UP)
    edge.start_api()
    worker = edge.start_worker()
    edge.wait_for_sender(down_id)
    edge.wait_for_sender(up_id)

    # A sender asks getMe before its first send: Telegram goes down for the bot once that has
    # been answered, or the sender would back off on getMe and send nothing for the breaker to
    # count.
    def answered_get_me(telegram_id: int) -> bool:
        calls = edge.sim_get("/_sim/calls", bot_id=telegram_id, method="getMe")
        return any(call["status"] == 200 for call in calls)

    edge.wait_until(lambda: answered_get_me(DOWN) and answered_get_me(UP), 15, "the getMe calls")

    edge.sim_post("/_sim/faults", {"down_bots": [DOWN]})
    down_since = time.monotonic()
    deliver(edge, down_id, down_secret, 20_000)
    deliver(edge, up_id, up_secret, 30_000)

    def breakers() -> dict[str, dict[str, str]]:
        return dict(HTTP.get(f"{worker.url}/readyz", timeout=10).json()["breakers"])

    edge.wait_until(lambda: f"telegram bot {DOWN}" in breakers(), 30, "the down bot's breaker")
    assert breakers()[f"telegram bot {DOWN}"]["state"] in ("open", "half-open")
    assert f"telegram bot {UP}" not in breakers()
    # The bot's row says so, for the panel's dashboard; the other bot's does not.
    failing = "SELECT telegram_bot_id FROM bots WHERE telegram_failing_since IS NOT NULL"
    edge.wait_until(lambda: edge.query(failing) == [(DOWN,)], 10, "the outage on the bot's row")
    # The other bot's replies all go out while the first one's Telegram is down.
    edge.wait_until(lambda: all_replied(edge, UP), 30, "the other bot's replies")
    assert_once_in_order(edge, UP, 30_000)
    edge.wait_until(lambda: time.monotonic() - down_since >= outage, outage + 5, "the outage")
    assert sent_by_chat(edge, DOWN) == {}
    tried = len(edge.sim_get("/_sim/calls", bot_id=DOWN, method="sendMessage"))
    edge.sim_post("/_sim/faults", {"down_bots": []})
    back_at = time.monotonic()

    # Not retried hot: the calls that opened it and a probe each cool-off, not a retry per
    # reply per backoff step (100 replies waited).
    print(f"{tried} sendMessage calls reached Telegram in {outage} s down, 100 replies waiting")
    assert tried <= 30, tried
    edge.wait_until(
        lambda: (
            len(sent_by_chat(edge, DOWN)) == PEOPLE
            and sum(map(len, sent_by_chat(edge, DOWN).values())) == PEOPLE * PER_PERSON
        ),
        90,
        "every parked reply after Telegram came back",
    )
    caught_up = time.monotonic() - back_at
    assert_once_in_order(edge, DOWN, 20_000)
    assert edge.query("SELECT state, count(*) FROM outbox GROUP BY 1") == [
        ("sent", 2 * PEOPLE * PER_PERSON)
    ]
    assert edge.query("SELECT state, count(*) FROM inbox GROUP BY 1") == [
        ("done", 2 * PEOPLE * PER_PERSON)
    ]
    edge.wait_until(lambda: breakers() == {}, 10, "the breaker closed")
    assert edge.query(failing) == []
    metrics = HTTP.get(f"{worker.url}/metrics", timeout=10).text
    assert f'gatehouse_breaker_openings_total{{dependency="telegram",target="bot {DOWN}"}} 1.0' in (
        metrics
    )
    written_down(
        "Telegram down for one bot",
        f"every Bot API call with one bot's token answered nginx's 502 page for {outage} s",
        f"{PEOPLE * PER_PERSON} updates to each of two bots, from {PEOPLE} people each",
        {
            "breaker opened": "once, for the failing bot only",
            "send calls that reached Telegram while down": tried,
            "the other bot's replies while down": f"{PEOPLE * PER_PERSON}, once each, in order",
            "parked replies sent after": f"{PEOPLE * PER_PERSON}, once each, in order",
            "lost": 0,
            "all parked replies out after Telegram came back": f"{caught_up:.1f} s",
        },
    )
