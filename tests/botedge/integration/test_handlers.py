"""What the default bot logic records: who counts as a person, and a group's move to a new id."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import psycopg
import pytest

from botedge.handlers import BotLogic
from botedge.updates import InboxRow
from shared.db import connect
from tests.botedge.conftest import insert_bot


def update(bot_id: int, kind: str, body: dict[str, Any], chat_key: int) -> InboxRow:
    return InboxRow(
        id=1,
        bot_id=bot_id,
        update_id=1,
        chat_key=chat_key,
        kind=kind,
        payload={"update_id": 1, kind: body},
        attempt=1,
        lock_token=uuid.uuid4(),
    )


async def apply(database_url: str, item: InboxRow) -> None:
    conn = await connect(database_url, autocommit=True)
    async with conn, conn.transaction():
        await BotLogic().apply(conn, item, None)


def people(database_url: str) -> list[int]:
    with psycopg.connect(database_url) as conn:
        return [r[0] for r in conn.execute("SELECT telegram_user_id FROM people ORDER BY 1")]


@pytest.mark.parametrize("account", [777000, 1087968824, 136817688])
def test_service_accounts__are_not_recorded_as_people(database_url: str, account: int) -> None:
    bot, _, _ = insert_bot(database_url)
    group = -1001234
    body = {
        "message_id": 5,
        "from": {"id": account, "is_bot": False, "first_name": "Telegram"},
        "chat": {"id": group, "type": "supergroup", "title": "G"},
        "date": 1_790_000_000,
        "text": "forwarded post",
    }
    asyncio.run(apply(database_url, update(bot, "message", body, group)))
    person = {"id": 42, "is_bot": False, "first_name": "A"}
    asyncio.run(apply(database_url, update(bot, "message", {**body, "from": person}, group)))
    assert people(database_url) == [42]


def test_group_migration__moves_the_channel_and_pending_sends(database_url: str) -> None:
    bot, _, _ = insert_bot(database_url)
    old, new = -4001, -1004001
    with psycopg.connect(database_url) as conn:
        conn.execute("INSERT INTO channels (telegram_chat_id, title) VALUES (%s, 'Group')", (old,))
        for n, state in enumerate(("pending", "sent")):
            conn.execute(
                "INSERT INTO outbox (bot_id, chat_id, method, payload, dedupe_key, state)"
                " VALUES (%s, %s, 'sendMessage', %s, %s, %s)",
                (bot, old, json.dumps({"chat_id": old, "text": "hi"}), f"t:{n}", state),
            )
    body = {
        "message_id": 9,
        "from": {"id": 42, "is_bot": False, "first_name": "A"},
        "chat": {"id": old, "type": "group", "title": "Group"},
        "date": 1_790_000_000,
        "migrate_to_chat_id": new,
    }
    asyncio.run(apply(database_url, update(bot, "message", body, old)))
    with psycopg.connect(database_url) as conn:
        channels = conn.execute("SELECT telegram_chat_id FROM channels").fetchall()
        sends = conn.execute(
            "SELECT state, chat_id, payload->>'chat_id' FROM outbox ORDER BY id"
        ).fetchall()
    assert channels == [(new,)]
    # What is already sent stays as history; what waits goes to the new id.
    assert sends == [("pending", new, str(new)), ("sent", old, str(old))]


def test_my_chat_member__the_bots_rights_in_a_channel_follow_its_promotions(
    database_url: str,
) -> None:
    bot, _, _ = insert_bot(database_url)
    chat = {"id": -1001000000301, "type": "channel", "title": "Later", "username": "later_ch"}
    me = {"id": 5550001, "is_bot": True, "first_name": "Bot"}

    def change(new: dict[str, Any]) -> InboxRow:
        body = {
            "chat": chat,
            "from": {"id": 9, "is_bot": False, "first_name": "Owner"},
            "date": 1_790_000_000,
            "old_chat_member": {"user": me, "status": "left"},
            "new_chat_member": {"user": me, **new},
        }
        return update(bot, "my_chat_member", body, chat["id"])

    def standing() -> list[tuple[Any, ...]]:
        with psycopg.connect(database_url) as conn:
            return conn.execute(
                "SELECT c.title, c.chat_type, bc.status, bc.is_admin, bc.can_invite_users,"
                " bc.can_restrict_members FROM bot_channels bc"
                " JOIN channels c ON c.id = bc.channel_id"
            ).fetchall()

    asyncio.run(apply(database_url, change({"status": "member"})))
    assert standing() == [("Later", "channel", "member", False, False, False)]
    promoted = {"status": "administrator", "can_invite_users": True, "can_restrict_members": True}
    asyncio.run(apply(database_url, change(promoted)))
    assert standing() == [("Later", "channel", "administrator", True, True, True)]
    asyncio.run(apply(database_url, change({"status": "left"})))
    assert standing() == [("Later", "channel", "left", False, False, False)]


def test_statistics__a_start_and_a_block_in_a_private_chat_are_counted_not_a_group_start(
    database_url: str,
) -> None:
    bot, _, _ = insert_bot(database_url)
    person = {"id": 4242, "is_bot": False, "first_name": "A"}
    private = {"id": 4242, "type": "private", "first_name": "A"}
    start = {"message_id": 1, "from": person, "chat": private, "date": 1, "text": "/start"}
    group = {**start, "chat": {"id": -100777, "type": "supergroup", "title": "G"}}
    kicked = {
        "chat": private,
        "from": person,
        "date": 2,
        "old_chat_member": {"status": "member", "user": {"id": 1, "is_bot": True}},
        "new_chat_member": {"status": "kicked", "user": {"id": 1, "is_bot": True}},
    }
    for kind, body, chat in (
        ("message", start, 4242),
        ("message", group, -100777),
        ("my_chat_member", kicked, 4242),
    ):
        asyncio.run(apply(database_url, update(bot, kind, body, chat)))
    with psycopg.connect(database_url) as conn:
        counted = conn.execute(
            "SELECT s.kind, p.telegram_user_id FROM stat_events s"
            " JOIN people p ON p.id = s.person_id WHERE s.bot_id = %s ORDER BY s.id",
            (bot,),
        ).fetchall()
    assert counted == [("start", 4242), ("blocked", 4242)]
