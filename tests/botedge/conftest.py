"""Helpers shared by the bot edge tests."""

from __future__ import annotations

import json
import secrets

import psycopg

from shared.secretbox import SecretBox
from shared.settings import Secret
from tests.conftest import SECRETS
from tests.conftest import OpenPool as OpenPool  # the pool opener's type, named here too

BOX = SecretBox(Secret(SECRETS["BOT_TOKEN_KEY"]))


def new_token(telegram_bot_id: int) -> str:
    return f"{telegram_bot_id}:AA{secrets.token_urlsafe(30)[:33]}"


def insert_bot(
    database_url: str, telegram_bot_id: int = 5550001, mode: str = "webhook"
) -> tuple[int, str, str]:
    """A bot row as botedge stores it; returns (id, token, webhook secret)."""
    token = new_token(telegram_bot_id)
    secret = secrets.token_urlsafe(24)
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "INSERT INTO bots (telegram_bot_id, username, token_encrypted,"
            " webhook_secret_encrypted, mode) VALUES (%s, %s, %s, %s, %s) RETURNING id",
            (telegram_bot_id, f"bot{telegram_bot_id}", BOX.seal(token), BOX.seal(secret), mode),
        ).fetchone()
        assert row is not None
        return int(row[0]), token, secret


def message(update_id: int, user_id: int, text: str) -> dict[str, object]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "from": {"id": user_id, "is_bot": False, "first_name": f"U{user_id}"},
            "chat": {"id": user_id, "type": "private", "first_name": f"U{user_id}"},
            "date": 1_790_000_000,
            "text": text,
        },
    }


def enqueue(database_url: str, bot_id: int, updates: list[tuple[int, int, str]]) -> None:
    """Insert (update_id, user_id, text) message updates straight into the inbox."""
    with psycopg.connect(database_url) as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO inbox (bot_id, update_id, chat_key, kind, payload)"
            " VALUES (%s, %s, %s, 'message', %s)",
            [(bot_id, u, user, json.dumps(message(u, user, text))) for u, user, text in updates],
        )


def queue_messages(database_url: str, bot_id: int, messages: list[tuple[int, str]]) -> None:
    """Outbox rows as a handler would write them: (chat_id, text), in this order."""
    with psycopg.connect(database_url) as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO outbox (bot_id, chat_id, method, payload, dedupe_key)"
            " VALUES (%s, %s, 'sendMessage', %s, %s)",
            [
                (
                    bot_id,
                    chat,
                    json.dumps({"chat_id": chat, "text": text}),
                    f"test:{bot_id}:{n}:{text}",
                )
                for n, (chat, text) in enumerate(messages)
            ],
        )
