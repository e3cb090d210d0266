"""`/language`: the person picks the language the bot writes to them in, kept per person and
bot. Until they pick, Telegram's language for them decides when the bot has it, else the bot's
default (`words.pick`)."""

from __future__ import annotations

from typing import Any

from botedge.outbox_store import Reply
from botedge.routing import Context, Routes, Visit, callback_answer, html_message
from botedge.sqlq import Q
from botedge.updates import InboxRow
from botedge.words import LANGUAGES, Words, msg
from shared.db import Connection

CHOOSE = msg("language.choose", "Choose the language I write in:")
CHOSEN = msg("language.chosen", "From now on I write in English.")


def chooser(current: str) -> dict[str, Any]:
    """A button per language, by its own name; the one in use ticked."""
    rows = [
        [{"text": f"{'✓ ' if code == current else ''}{name}", "callback_data": f"lang:{code}"}]
        for code, name in LANGUAGES.items()
    ]
    return {"inline_keyboard": rows}


class Language:
    def __init__(self, words: Words) -> None:
        self.words = words

    def register(self, routes: Routes) -> None:
        routes.commands["/language"] = _Ask()
        routes.callbacks["lang:"] = _Chosen(self.words)


class _Ask:
    reads_telegram = False

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> None:
        return None

    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        say = visit.say
        return [html_message(visit.update.chat_key, say(CHOOSE), chooser(say.language))]


class _Chosen:
    """`lang:<code>`: kept for the person and this bot; said in the new language."""

    reads_telegram = False

    def __init__(self, words: Words) -> None:
        self.words = words

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> None:
        return None

    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        update = visit.update
        if visit.arg not in LANGUAGES or visit.person_id is None:
            return [callback_answer(update)]
        await conn.execute(
            Q["choose_language"],
            {"bot_id": update.bot_id, "person_id": visit.person_id, "language": visit.arg},
        )
        say = self.words.speech(visit.arg, update.bot_id)
        replies = [callback_answer(update, say(CHOSEN))]
        message_id = (update.body.get("message") or {}).get("message_id")
        if isinstance(message_id, int):
            edit = {
                "chat_id": update.chat_key,
                "message_id": message_id,
                "text": say(CHOSEN),
                "reply_markup": chooser(visit.arg),
            }
            replies.append(Reply(update.chat_key, "editMessageText", edit))
        return replies
