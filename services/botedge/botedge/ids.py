"""The ids botedge handles, as types: as plain ints, one passed for another would type-check.

`BotId` is our `bots.id`, `PersonId` our `people.id`; `ChatId` and `UserId` are Telegram's
(a private chat's id is its user's id, so a `UserId` becomes a `ChatId` by name only)."""

from __future__ import annotations

from typing import NewType

BotId = NewType("BotId", int)
PersonId = NewType("PersonId", int)
ChatId = NewType("ChatId", int)
UserId = NewType("UserId", int)
