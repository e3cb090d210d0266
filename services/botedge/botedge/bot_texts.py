"""The texts each bot's owner wrote in place of the bot's own (migration 0044), kept in the
worker's `Words`.

Each change bumps the bot's `texts_version` and announces the bot on `bot_texts`. A claimed
update carries its bot's version: one newer than what is kept is read before the update is
handled, so the visitor after a save reads the new words whatever the order of the notices.
What a worker writes on its own (reminders, order notices) takes the words as the last notice
left them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Annotated, Literal

import msgspec

from botedge import errors
from botedge.db import connection
from botedge.ids import BotId
from botedge.sqlq import Q
from botedge.words import LANGUAGES, LIMITS, REGISTRY, Words, check, editable
from shared.db import Pool
from shared.tasks import retrieve

log = logging.getLogger("botedge.bot_texts")

CHANNEL = "bot_texts"


class OwnTexts:
    def __init__(self, pool: Pool, words: Words) -> None:
        self.pool = pool
        self.words = words
        self._reads: set[asyncio.Task[None]] = set()

    async def load(self, bot_id: BotId | None = None) -> None:
        """Read the texts of one bot, or of every bot."""
        async with connection(self.pool) as conn:
            cur = await conn.execute(Q["bot_texts"], {"bot_id": bot_id})
            rows = await cur.fetchall()
        versions: dict[int, int] = {}
        texts: dict[int, dict[tuple[str, str], str]] = defaultdict(dict)
        for row in rows:
            versions[row["bot_id"]] = int(row["texts_version"])
            if row["key"] is not None:
                texts[row["bot_id"]][row["language"], row["key"]] = row["text"]
        for bot, version in versions.items():
            self.words.own(bot, version, texts.get(bot, {}))

    async def ready(self, bot_id: BotId, version: int) -> None:
        """The bot's texts at least as of `version`."""
        if self.words.version(bot_id) < version:
            await self.load(bot_id)

    def announced(self, payload: str) -> None:
        """A `NOTIFY bot_texts, '<bot id>'`: that bot's texts read again."""
        if payload.isdigit():
            self._read(BotId(int(payload)))

    def reconnected(self) -> None:
        """What was announced while the LISTEN connection was down is lost: read them all."""
        self._read(None)

    def _read(self, bot_id: BotId | None) -> None:
        task = asyncio.get_running_loop().create_task(self.load(bot_id))
        self._reads.add(task)
        task.add_done_callback(self._reads.discard)
        task.add_done_callback(retrieve(log, f"reading the texts of bot {bot_id or 'all'}"))


class Editable(msgspec.Struct):
    """A text an owner may reword: where it goes, its limit, the placeholders it keeps, and
    the text the bot ships in each language."""

    key: str
    form: str
    limit: int
    placeholders: list[str]
    shipped: dict[str, str]


class Proposed(msgspec.Struct, forbid_unknown_fields=True):
    key: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    language: Literal["en", "fa", "ru", "ar"]
    text: Annotated[str, msgspec.Meta(max_length=4096)]


def catalog(words: Words) -> list[Editable]:
    return [
        Editable(
            key=m.key,
            form=str(m.form),
            limit=m.limit or LIMITS[str(m.form)],
            placeholders=sorted(m.placeholders),
            shipped={language: words.shipped(m, language) for language in LANGUAGES},
        )
        for m in editable()
    ]


def checked(proposed: Proposed) -> None:
    """Raises when the text may not stand in for its message (404: no such editable text)."""
    message = REGISTRY.get(proposed.key)
    if message is None or message.form is None:
        raise errors.NotFound(f"no text {proposed.key!r} an owner may reword")
    refusal = check(message, proposed.text)
    if refusal is not None:
        raise errors.InvalidValues(refusal.detail, field="text", code=refusal.code)
