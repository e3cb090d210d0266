"""A bot's words as its owner wants them: the texts the owner may reword, each with the text
the bot ships in every language and the owner's own where written; and the bot's default
language, for members whose language it does not speak.

The texts and their rules are botedge's (DESIGN: bot words): the panel reads the list from
botedge, asks it whether a text may stand, and writes the owner's text as configuration.
Every worker reads it before the bot's next update (migration 0044).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import errors, store
from panel_api.access import Caller, answer, audit, path_id
from panel_api.internal import Internal, relayed
from shared.clock import Clock
from shared.db import Connection
from shared.errors import Problem, json_body
from shared.web import runtime

Language = Literal["en", "fa", "ru", "ar"]
Key = Annotated[str, msgspec.Meta(min_length=1, max_length=100, pattern=r"^[a-z_]+(\.[a-z_]+)*$")]


class Written(msgspec.Struct):
    text: str
    updated_at: dt.datetime
    # The team member's email; null once they have left the team.
    updated_by: str | None


class BotText(msgspec.Struct):
    """One text an owner may reword, as botedge lists it."""

    key: str
    # How the bot sends it: a message as plain text or in Telegram's HTML, a button's label,
    # a note shown over the chat.
    form: Literal["text", "html", "button", "note"]
    # In characters, with every placeholder at its longest.
    limit: int
    placeholders: list[str]
    # The text the bot ships, by language.
    shipped: dict[str, str]


class OwnedText(BotText):
    """A text an owner may reword, with the owner's own by language where written."""

    written: dict[str, Written]


class BotTexts(msgspec.Struct):
    bot_id: int
    default_language: Language
    texts: list[OwnedText]


class NewText(msgspec.Struct, forbid_unknown_fields=True):
    key: Key
    language: Language
    text: Annotated[str, msgspec.Meta(max_length=4096)]


class TextReset(msgspec.Struct, forbid_unknown_fields=True):
    key: Key
    language: Language


class DefaultLanguage(msgspec.Struct, forbid_unknown_fields=True):
    default_language: Language


class TextResetDone(msgspec.Struct):
    # False when there was no text of the owner's to reset.
    reset: bool


class Words:
    def __init__(self, clock: Clock, botedge: Internal) -> None:
        self.clock = clock
        self.botedge = botedge

    async def texts(self, request: Request, caller: Caller) -> Response:
        bot_id = path_id(request, "bot_id", "bot")
        catalog = await self._catalog()
        async with store.connection(runtime(request).pool) as conn:
            bot = await _bot(conn, bot_id)
            rows = await store.rows(conn, "bot_texts_of", {"bot_id": bot_id})
        written: dict[str, dict[str, Written]] = {}
        for row in rows:
            written.setdefault(row["key"], {})[row["language"]] = Written(
                row["text"], row["updated_at"], row["updated_by"]
            )
        texts = [
            OwnedText(c.key, c.form, c.limit, c.placeholders, c.shipped, written.get(c.key, {}))
            for c in catalog
        ]
        return answer(BotTexts(bot_id, bot["default_language"], texts))

    async def write(self, request: Request, caller: Caller) -> Response:
        """The owner's text in place of the bot's, once botedge says it may stand."""
        bot_id = path_id(request, "bot_id", "bot")
        body = await json_body(request, NewText, limit=65536)
        checked = await self.botedge.ask("POST", "/internal/texts/check", msgspec.to_builtins(body))
        if checked.status_code != 200:
            return relayed(checked)
        now = self.clock.now()
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            await _bot(conn, bot_id)
            params = {"bot_id": bot_id, "key": body.key, "language": body.language}
            before = await store.row(conn, "bot_text", params)
            await conn.execute(
                store.Q["set_bot_text"],
                {**params, "text": body.text, "now": now, "member_id": caller.id},
            )
            await audit(
                conn,
                caller,
                self.clock,
                "bots.text",
                _target(bot_id, body),
                before,
                {"text": body.text},
            )
        return answer(Written(body.text, now, caller.email))

    async def reset(self, request: Request, caller: Caller) -> Response:
        """Back to the text the bot ships."""
        bot_id = path_id(request, "bot_id", "bot")
        body = await json_body(request, TextReset, limit=4096)
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            await _bot(conn, bot_id)
            params = {"bot_id": bot_id, "key": body.key, "language": body.language}
            before = await store.row(conn, "bot_text", params)
            if before is not None:
                await conn.execute(store.Q["reset_bot_text"], params)
                await audit(
                    conn, caller, self.clock, "bots.text_reset", _target(bot_id, body), before, None
                )
        return answer(TextResetDone(before is not None))

    async def set_language(self, request: Request, caller: Caller) -> Response:
        """The language the bot writes in to a member whose own it does not speak."""
        bot_id = path_id(request, "bot_id", "bot")
        body = await json_body(request, DefaultLanguage, limit=4096)
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            before = await _bot(conn, bot_id)
            await store.row(
                conn, "set_bot_language", {"bot_id": bot_id, "language": body.default_language}
            )
            await audit(
                conn,
                caller,
                self.clock,
                "bots.language",
                f"bot:{bot_id}",
                {"default_language": before["default_language"]},
                body,
            )
        return answer(body)

    async def _catalog(self) -> list[BotText]:
        found = await self.botedge.ask("GET", "/internal/texts")
        if found.status_code != 200:
            raise Problem(
                503, "botedge-unavailable", f"botedge /internal/texts: {found.status_code}"
            )
        return msgspec.json.decode(found.content, type=list[BotText])


async def _bot(conn: Connection, bot_id: int) -> dict[str, Any]:
    found = await store.row(conn, "bot_language", {"bot_id": bot_id})
    if found is None:
        raise errors.NotFound("no bot by that id")
    return found


def _target(bot_id: int, body: NewText | TextReset) -> str:
    return f"bot:{bot_id}:text:{body.key}:{body.language}"
