"""A broadcast to an audience, through a real worker to the simulated Telegram: only the bot's
people whose membership in a channel has the chosen status and whom the bot writes to in the
chosen language get it, or only the people chosen by hand; one set to start later waits,
passed over while another goes out, and goes once its time has come."""

from __future__ import annotations

from collections import Counter

from tests.botedge.e2e.conftest import Edge
from tests.botedge.e2e.test_broadcasts import people, progress, received

BOT = 5550811
FIRST, LAST = 9_300_001, 9_300_040
CHANNEL = -1009300000001


def test_broadcast_audience__by_status_and_language_then_chosen_then_at_its_time(
    edge: Edge,
) -> None:
    bot_id, _, _ = edge.add_bot(BOT, mode="polling")
    people(edge, bot_id, FIRST, LAST)
    [(channel,)] = edge.query(
        "INSERT INTO channels (telegram_chat_id, title, is_paid) VALUES (%s, 'Club', true)"
        " RETURNING id",
        CHANNEL,
    )
    # The first 20 in the channel: 10 active, 5 in grace, 5 expired. Of the active, the bot
    # writes in Persian to 0-2 (their choice), 3-4 (Telegram's language for them), and in
    # English to the rest, one of whom chose English over a Persian Telegram.
    edge.query(
        "INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,"
        " next_check_at, updated_at)"
        " SELECT p.id, %s, s.status, now() + interval '1 day', 3,"
        "        CASE WHEN s.status = 'expired' THEN NULL ELSE now() END, now()"
        "   FROM people p, LATERAL (SELECT CASE WHEN p.telegram_user_id < %s THEN 'active'"
        "        WHEN p.telegram_user_id < %s THEN 'grace' ELSE 'expired' END AS status) s"
        "  WHERE p.telegram_user_id BETWEEN %s AND %s RETURNING 1",
        channel,
        FIRST + 10,
        FIRST + 15,
        FIRST,
        FIRST + 19,
    )
    edge.query(
        "UPDATE bot_people SET language = 'fa' FROM people p WHERE p.id = bot_people.person_id"
        " AND p.telegram_user_id IN (%s, %s, %s) RETURNING 1",
        FIRST,
        FIRST + 1,
        FIRST + 2,
    )
    edge.query(
        "UPDATE people SET language_code = 'fa-IR' WHERE telegram_user_id IN (%s, %s, %s)"
        " RETURNING 1",
        FIRST + 3,
        FIRST + 4,
        FIRST + 5,
    )
    edge.query(
        "UPDATE bot_people SET language = 'en' FROM people p WHERE p.id = bot_people.person_id"
        " AND p.telegram_user_id = %s RETURNING 1",
        FIRST + 5,
    )
    # Set to start in an hour, before the others: passed over while they go.
    [(later,)] = edge.query(
        "INSERT INTO broadcasts (bot_id, text, starts_at) VALUES (%s, 'Later', now() + interval"
        " '1 hour') RETURNING id",
        bot_id,
    )
    [(persian,)] = edge.query(
        "INSERT INTO broadcasts (bot_id, text, channel_id, member_status, language)"
        " VALUES (%s, 'Active, in Persian', %s, 'active', 'fa') RETURNING id",
        bot_id,
        channel,
    )
    chosen = edge.query(
        "SELECT id FROM people WHERE telegram_user_id IN (%s, %s, %s) ORDER BY id",
        FIRST + 12,
        FIRST + 30,
        LAST,
    )
    [(by_hand,)] = edge.query(
        "INSERT INTO broadcasts (bot_id, text, people) VALUES (%s, 'Chosen', %s) RETURNING id",
        bot_id,
        [person for (person,) in chosen],
    )
    edge.start_worker()
    edge.query("SELECT pg_notify('broadcasts', '')")
    for broadcast_id in (persian, by_hand):
        edge.wait_until(
            lambda b=broadcast_id: progress(edge, b)["state"] == "done", 30, "the broadcast done"
        )
    assert received(edge, "Active, in Persian") == Counter(
        {FIRST: 1, FIRST + 1: 1, FIRST + 2: 1, FIRST + 3: 1, FIRST + 4: 1}
    )
    assert received(edge, "Chosen") == Counter({FIRST + 12: 1, FIRST + 30: 1, LAST: 1})
    assert (progress(edge, persian)["recipients"], progress(edge, by_hand)["recipients"]) == (5, 3)
    # The later one was looked at and left: still queued, nothing of it sent.
    assert progress(edge, later)["state"] == "queued"
    assert received(edge, "Later") == Counter()
    # Its time comes: it goes to everyone of the bot, once each.
    edge.query(
        "UPDATE broadcasts SET starts_at = now() - interval '1 second' WHERE id = %s RETURNING 1",
        later,
    )
    edge.query("SELECT pg_notify('broadcasts', '')")
    edge.wait_until(lambda: progress(edge, later)["state"] == "done", 30, "the later one done")
    assert received(edge, "Later") == Counter({user: 1 for user in range(FIRST, LAST + 1)})
