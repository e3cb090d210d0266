"""The forced-join gate end to end: real worker processes, the simulated Telegram's call log."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from botedge.words import FSI, PDI
from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP

# What the gate says first, in English.
GATE_OPENING = "To open this, join first: "
NEWS, TALK = -1001000000101, -1001000000102
VISITOR = 4242


@dataclass
class Setup:
    bot_id: int
    telegram_bot_id: int
    content_id: int


def gate_setup(edge: Edge, telegram_bot_id: int = 5550101, body: str = "The secret") -> Setup:
    bot_id, _, _ = edge.add_bot(telegram_bot_id, mode="polling")
    for chat, name in ((NEWS, "news_one"), (TALK, "talk_two")):
        edge.sim_post(
            "/_sim/chats",
            {"id": chat, "type": "channel", "username": name, "admin_bots": [telegram_bot_id]},
        )
    with_channels = edge.query(
        "WITH c AS (INSERT INTO channels (telegram_chat_id, title, username, is_gate)"
        " VALUES (%s, 'News', 'news_one', true), (%s, 'Talk', 'talk_two', true) RETURNING id)"
        " INSERT INTO bot_channels (bot_id, channel_id, default_gate)"
        " SELECT %s, id, true FROM c RETURNING channel_id",
        NEWS,
        TALK,
        bot_id,
    )
    assert len(with_channels) == 2
    [(content_id,)] = edge.query(
        "INSERT INTO contents (bot_id, code, kind, body) VALUES (%s, 'promo', 'text', %s)"
        " RETURNING id",
        bot_id,
        body,
    )
    return Setup(bot_id, telegram_bot_id, int(content_id))


def sent_to(edge: Edge, chat_id: int) -> list[dict[str, Any]]:
    return list(edge.sim_get("/_sim/sent", chat_id=chat_id))


def calls(edge: Edge, method: str) -> list[dict[str, Any]]:
    return [c for c in edge.sim_get("/_sim/calls", method=method) if c["status"] == 200]


def settled(edge: Edge) -> bool:
    unfinished = edge.query("SELECT count(*) FROM inbox WHERE state <> 'done'")[0][0]
    unsent = edge.query("SELECT count(*) FROM outbox WHERE state = 'pending'")[0][0]
    return unfinished == 0 and unsent == 0


def press(edge: Edge, setup: Setup, message_id: int) -> None:
    edge.sim_post(
        "/_sim/press",
        {
            "bot_id": setup.telegram_bot_id,
            "user_id": VISITOR,
            "message_id": message_id,
            "data": f"gate:{setup.content_id}",
        },
    )


def edits(edge: Edge) -> list[dict[str, Any]]:
    rows = edge.query(
        "SELECT payload FROM outbox WHERE method = 'editMessageText' AND state = 'sent' ORDER BY id"
    )
    return [row[0] for row in rows]


def url_buttons(markup: dict[str, Any]) -> list[str]:
    return [b["url"] for row in markup["inline_keyboard"] for b in row if "url" in b]


def test_gate__two_channels_joined_one_by_one_then_content_once(edge: Edge) -> None:
    setup = gate_setup(edge)
    edge.start_worker()
    edge.sim_post(
        "/_sim/messages",
        {"bot_id": setup.telegram_bot_id, "user_id": VISITOR, "text": "/start promo"},
    )
    edge.wait_until(lambda: bool(sent_to(edge, VISITOR)), 30, "the gate message")
    [gate] = sent_to(edge, VISITOR)
    assert gate["text"] == (
        f"{GATE_OPENING}<b>{FSI}News{PDI}</b>, <b>{FSI}Talk{PDI}</b>. Then press “I've joined”."
    )
    [first] = edge.query("SELECT payload FROM outbox WHERE method = 'sendMessage'")
    assert url_buttons(first[0]["reply_markup"]) == [
        "https://t.me/news_one",
        "https://t.me/talk_two",
    ]

    edge.sim_post("/_sim/join", {"chat_id": NEWS, "user_id": VISITOR})
    press(edge, setup, gate["message_id"])
    edge.wait_until(lambda: len(edits(edge)) == 1, 30, "the gate edited")
    assert url_buttons(edits(edge)[0]["reply_markup"]) == ["https://t.me/talk_two"]
    assert "<b>News</b>" not in edits(edge)[0]["text"]
    assert sent_to(edge, VISITOR) == [gate]

    edge.sim_post("/_sim/join", {"chat_id": TALK, "user_id": VISITOR})
    press(edge, setup, gate["message_id"])
    edge.wait_until(lambda: len(sent_to(edge, VISITOR)) == 2, 30, "the content")
    assert sent_to(edge, VISITOR)[1]["text"] == "The secret"
    edge.wait_until(lambda: bool(calls(edge, "deletemessage")), 30, "the gate deleted")

    # A third press (a double tap that raced the delete) is answered and sends nothing.
    answered = len(calls(edge, "answercallbackquery"))
    edge.sim_post(
        "/_sim/updates",
        {
            "bot_id": setup.telegram_bot_id,
            "update": {
                "callback_query": {
                    "id": "third",
                    "from": {"id": VISITOR, "is_bot": False, "first_name": "V"},
                    "message": {
                        "message_id": gate["message_id"],
                        "chat": {"id": VISITOR, "type": "private"},
                        "date": int(time.time()),
                    },
                    "chat_instance": "1",
                    "data": f"gate:{setup.content_id}",
                }
            },
        },
    )
    edge.wait_until(
        lambda: len(calls(edge, "answercallbackquery")) == answered + 1 and settled(edge),
        30,
        "the third press answered",
    )
    assert len(sent_to(edge, VISITOR)) == 2
    assert edge.query("SELECT count(*) FROM content_deliveries") == [(1,)]
    # Every press was answered: two presses and the third.
    assert len(calls(edge, "answercallbackquery")) == 3
    # Counted for the statistics in the updates' own transactions: one start, the gate shown
    # once (a press that still finds a channel missing shows it again, not anew), passed by
    # the second and third press, the content delivered once.
    counted = dict(
        edge.query(
            "SELECT kind, count(*) FROM stat_events WHERE bot_id = %s"
            " AND (content_id = %s OR kind = 'start') GROUP BY kind",
            setup.bot_id,
            setup.content_id,
        )
    )
    assert counted == {"start": 1, "gate_shown": 1, "gate_passed": 2, "content_delivered": 1}
    # Each the visitor's, the start and the gate shown too: the /start was finished by one
    # statement that recorded the visitor with them.
    [(person,)] = edge.query("SELECT id FROM people WHERE telegram_user_id = %s", VISITOR)
    assert edge.query(
        "SELECT DISTINCT person_id FROM stat_events WHERE bot_id = %s", setup.bot_id
    ) == [(person,)]
    assert edge.query(
        "SELECT count(*) FROM bot_people WHERE bot_id = %s AND person_id = %s",
        setup.bot_id,
        person,
    ) == [(1,)]


def test_gate__a_member_of_both_gets_the_content_at_once(edge: Edge) -> None:
    setup = gate_setup(edge)
    for chat in (NEWS, TALK):
        edge.sim_post("/_sim/join", {"chat_id": chat, "user_id": VISITOR})
    edge.start_worker()
    edge.sim_post(
        "/_sim/messages",
        {"bot_id": setup.telegram_bot_id, "user_id": VISITOR, "text": "/start promo"},
    )
    edge.wait_until(lambda: bool(sent_to(edge, VISITOR)), 30, "the content")
    assert [m["text"] for m in sent_to(edge, VISITOR)] == ["The secret"]


def test_gate__content_kept_in_memory_until_it_changes(edge: Edge) -> None:
    setup = gate_setup(edge)
    for chat in (NEWS, TALK):
        edge.sim_post("/_sim/join", {"chat_id": chat, "user_id": VISITOR})
    [(before,)] = edge.query("SELECT now()")
    worker = edge.start_worker()
    # The worker's first round of the rights watch rewrites the bot's channel rows, and any
    # change there empties the cache: wait for it before counting reads.
    edge.wait_until(
        lambda: (
            edge.query(
                "SELECT bool_and(coalesce(checked_at > %s, false)) FROM bot_channels", before
            )
            == [(True,)]
        ),
        30,
        "the rights watch's first round",
    )

    def lookups() -> str:
        text = HTTP.get(f"{worker.url}/metrics").text
        return "".join(
            line for line in text.splitlines() if line.startswith("botedge_content_lookups_total")
        )

    # Nothing is kept until wake-ups can arrive: the first read must find the worker listening.
    edge.wait_until(
        lambda: "botedge_listening 1.0" in HTTP.get(f"{worker.url}/metrics").text, 30, "LISTEN"
    )
    for n in range(2):
        start(edge, setup)
        edge.wait_until(lambda n=n: len(sent_to(edge, VISITOR)) == n + 1, 30, "the content")
    assert [m["text"] for m in sent_to(edge, VISITOR)] == ["The secret", "The secret"]
    assert 'source="database"} 1.0' in lookups() and 'source="memory"} 1.0' in lookups()
    # An owner's change reaches the next visitor: the change empties the worker's cache.
    edge.query(
        "UPDATE contents SET body = 'The new secret' WHERE id = %s RETURNING id", setup.content_id
    )
    start(edge, setup)
    edge.wait_until(lambda: len(sent_to(edge, VISITOR)) == 3, 30, "the content")
    assert sent_to(edge, VISITOR)[-1]["text"] == "The new secret"
    assert 'source="database"} 2.0' in lookups()


def test_gate__a_non_admin_channel_lets_the_visitor_through_and_stays_flagged(edge: Edge) -> None:
    setup = gate_setup(edge)
    edge.sim_post("/_sim/join", {"chat_id": NEWS, "user_id": VISITOR})
    # The bot was never made admin of TALK: Telegram cannot say who is there.
    edge.sim_post("/_sim/faults", {"non_admin_chats": [TALK]})
    edge.start_worker(RIGHTS_CHECK_INTERVAL="0.5")
    edge.sim_post(
        "/_sim/messages",
        {"bot_id": setup.telegram_bot_id, "user_id": VISITOR, "text": "/start promo"},
    )
    edge.wait_until(lambda: bool(sent_to(edge, VISITOR)), 30, "the content")
    assert [m["text"] for m in sent_to(edge, VISITOR)] == ["The secret"]
    [(sent,)] = edge.query("SELECT now()")

    def talk() -> tuple[str | None, bool]:
        [(error, checked)] = edge.query(
            "SELECT bc.last_error, bc.checked_at > %s FROM bot_channels bc"
            " JOIN channels c ON c.id = bc.channel_id WHERE c.telegram_chat_id = %s",
            sent,
            TALK,
        )
        return error, checked

    # The rights watch asks again and finds the bot a plain member: the flag stays.
    edge.wait_until(lambda: talk()[1], 30, "a rights watch round after the gate")
    assert talk() == ("Bad Request: member list is inaccessible", True)


def test_gate__an_unknown_code_is_told_so(edge: Edge) -> None:
    setup = gate_setup(edge)
    edge.start_worker()
    # The rights watch asks about the bot itself at start; count from after its round.
    edge.wait_until(
        lambda: (
            edge.query("SELECT bool_and(checked_at IS NOT NULL) FROM bot_channels") == [(True,)]
        ),
        30,
        "the rights watch's first round",
    )
    asked = len(calls(edge, "getchatmember"))
    edge.sim_post(
        "/_sim/messages",
        {"bot_id": setup.telegram_bot_id, "user_id": VISITOR, "text": "/start nope"},
    )
    edge.wait_until(lambda: bool(sent_to(edge, VISITOR)), 30, "an answer")
    assert "does not lead anywhere" in sent_to(edge, VISITOR)[0]["text"]
    assert len(calls(edge, "getchatmember")) == asked


def start(edge: Edge, setup: Setup, user: int = VISITOR) -> int:
    update = edge.sim_post(
        "/_sim/messages", {"bot_id": setup.telegram_bot_id, "user_id": user, "text": "/start promo"}
    )
    return int(update["update_id"])


def handled_by(edge: Edge, update_ids: list[int]) -> dict[int, str]:
    rows = edge.query(
        "SELECT update_id, locked_by FROM inbox WHERE state = 'done' AND update_id = ANY(%s)",
        update_ids,
    )
    return {int(u): str(holder) for u, holder in rows}


def test_gate__a_leave_seen_by_one_worker_empties_every_workers_cache(edge: Edge) -> None:
    setup = gate_setup(edge)
    for chat in (NEWS, TALK):
        edge.sim_post("/_sim/join", {"chat_id": chat, "user_id": VISITOR})
    # Either worker takes any update, not only the one that sends for the bot.
    edge.start_worker(WORKER_AFFINITY_SECONDS="0")
    edge.start_worker(WORKER_AFFINITY_SECONDS="0")
    # /start until both workers have let the visitor through: each has "joined" cached.
    before: list[int] = []
    for _ in range(40):
        before.append(start(edge, setup))
        edge.wait_until(lambda: settled(edge), 30, "the /start handled")
        if len(set(handled_by(edge, before).values())) == 2:
            break
    assert len(set(handled_by(edge, before).values())) == 2, "one worker took every update"
    assert {m["text"] for m in sent_to(edge, VISITOR)} == {"The secret"}
    asked = len(calls(edge, "getchatmember"))

    [leave] = edge.sim_post("/_sim/leave", {"chat_id": NEWS, "user_id": VISITOR})["update_ids"]
    edge.wait_until(lambda: bool(handled_by(edge, [leave])), 30, "the leave handled")
    left_at = time.monotonic()
    after: list[int] = []
    for _ in range(40):
        after.append(start(edge, setup))
        edge.wait_until(lambda: settled(edge), 30, "the /start handled")
        if len(set(handled_by(edge, after).values())) == 2:
            break
    first_answered = time.monotonic() - left_at
    holders = handled_by(edge, after)
    assert len(set(holders.values())) == 2, "one worker took every update"
    # Every /start after the leave, whichever worker took it, got the gate, not the content:
    # neither worker answered from a stale "joined".
    texts = [m["text"] for m in sent_to(edge, VISITOR)]
    assert all(text.startswith(GATE_OPENING) for text in texts[len(before) :])
    assert len(texts) == len(before) + len(after)
    assert len(calls(edge, "getchatmember")) > asked
    print(f"{len(after)} /start after the leave, all gated; loop took {first_answered:.2f} s")


def test_gate__telegram_timing_out_lets_no_one_through_and_buries_nothing(edge: Edge) -> None:
    setup = gate_setup(edge)
    edge.sim_post("/_sim/faults", {"rate_timeout": 1.0, "timeout_seconds": 0.5})
    edge.start_worker(WORKER_MAX_ATTEMPTS="2", GATE_RETRY_WINDOW="600")
    visitors = [5001, 5002, 5003]
    for user in visitors:
        start(edge, setup, user)

    def retried_past_max_attempts() -> bool:
        rows = edge.query("SELECT min(attempt) FROM inbox WHERE kind = 'message'")
        return rows[0][0] is not None and rows[0][0] >= 4

    edge.wait_until(retried_past_max_attempts, 60, "every update retried past 2 attempts")
    assert edge.query("SELECT count(*) FROM inbox WHERE state = 'dead'") == [(0,)]
    assert all(sent_to(edge, user) == [] for user in visitors)

    edge.sim_post("/_sim/faults", {"rate_timeout": 0.0})
    edge.wait_until(
        lambda: all(sent_to(edge, user) for user in visitors), 60, "every visitor answered"
    )
    for user in visitors:
        [gate] = sent_to(edge, user)
        assert gate["text"].startswith(GATE_OPENING)
    assert edge.query("SELECT count(*) FROM inbox WHERE state = 'dead'") == [(0,)]


def test_gate__channel_titles_are_escaped_in_the_html_gate_message(edge: Edge) -> None:
    setup = gate_setup(edge)
    edge.query(
        "UPDATE channels SET title = %s WHERE telegram_chat_id = %s RETURNING id",
        'Tom & <Jerry> "news"',
        NEWS,
    )
    edge.start_worker()
    edge.sim_post(
        "/_sim/messages",
        {"bot_id": setup.telegram_bot_id, "user_id": VISITOR, "text": "/start promo"},
    )
    # The simulated Telegram refuses HTML it cannot parse, as Telegram does: sent means parsed.
    edge.wait_until(lambda: bool(sent_to(edge, VISITOR)), 30, "the gate message")
    [gate] = sent_to(edge, VISITOR)
    assert f"<b>{FSI}Tom &amp; &lt;Jerry&gt; &quot;news&quot;{PDI}</b>" in gate["text"]


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most spans (start, end) open at one instant."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def test_gate__more_visitors_in_hand_than_the_worker_has_connections(edge: Edge) -> None:
    """A slot waits on Telegram without a connection: with Telegram 300 ms away, 48 slots on a
    pool of 16 have more visitors in hand than connections, each visitor gated once and the
    worker's leases renewed throughout."""
    setup = gate_setup(edge)
    edge.sim_post("/_sim/faults", {"delay_ms": 300})
    worker = edge.start_worker(
        WORKER_SLOTS="48", DB_POOL_MAX="16", LEASE_SECONDS="6", TELEGRAM_POLL_TIMEOUT="0"
    )
    visitors = list(range(6001, 6001 + 96))
    for user in visitors:
        start(edge, setup, user)
    edge.wait_until(
        lambda: all(sent_to(edge, user) for user in visitors), 60, "every visitor answered"
    )
    edge.wait_until(lambda: settled(edge), 30, "every update done")
    for user in visitors:
        [gate] = sent_to(edge, user)
        assert gate["text"].startswith(GATE_OPENING)
    # Two getChatMember calls a visitor, both at once (and the bot's own rights, at start).
    asks = [(c["started"], c["at"]) for c in calls(edge, "getChatMember")]
    assert len(asks) >= 2 * len(visitors)
    in_hand = most_at_once(asks) // 2
    assert in_hand > 16, in_hand
    # Each renewal found a connection within its 5 s wait: no lease was lost or refused.
    output = worker.output()
    assert "lease send:" not in output and "lease worker:" not in output
    assert "Traceback" not in output
