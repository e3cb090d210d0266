"""Bots and their dead updates, for the owner's panel.

Adding, pausing, resuming and removing a bot and replaying an update are botedge's to do (only
botedge calls Telegram): the panel forwards them to botedge's internal endpoints and hands
botedge's answers back unchanged.
A bot's token is shown only as its last four characters, decrypted in memory.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import errors
from panel_api.access import (
    CREATED,
    ID,
    Caller,
    Column,
    Listing,
    Paged,
    answer,
    converted,
    mapped,
    path_id,
    query,
    relay_audited,
)
from panel_api.internal import Internal
from shared.clock import Clock
from shared.errors import json_body
from shared.secretbox import SecretBox, SecretBoxError
from shared.telegram_shapes import TOKEN_PATTERN


class NewBot(msgspec.Struct, forbid_unknown_fields=True):
    token: Annotated[str, msgspec.Meta(max_length=200, pattern=TOKEN_PATTERN)]
    mode: Literal["polling", "webhook"] = "polling"


class Bot(msgspec.Struct):
    id: int
    telegram_bot_id: int
    username: str
    mode: Literal["polling", "webhook"]
    status: Literal["active", "paused", "removed"]
    # `...` and the token's last 4 characters; null when it cannot be decrypted.
    token: str | None
    token_invalid: bool
    last_error: str | None
    last_error_at: dt.datetime | None
    created_at: dt.datetime
    removed_at: dt.datetime | None


class BotChanged(msgspec.Struct):
    """botedge's answer to pausing, resuming or removing a bot, relayed."""

    id: int
    telegram_bot_id: int
    username: str
    mode: Literal["polling", "webhook"]
    status: Literal["active", "paused", "removed"]


class BotAdded(msgspec.Struct):
    """botedge's answer to adding a bot, relayed."""

    id: int
    telegram_bot_id: int
    username: str | None
    mode: Literal["polling", "webhook"]


class DeadUpdate(msgspec.Struct):
    id: int
    bot_id: int
    update_id: int
    chat_key: int
    kind: str
    attempt: int
    last_error: str | None
    received_at: dt.datetime
    done_at: dt.datetime | None
    # The update as Telegram sent it, so the owner sees what a replay would run again.
    payload: dict[str, Any]


class Replayed(msgspec.Struct):
    """botedge's answer to a replay, relayed."""

    replayed: int


BotsSort = Literal[
    "id", "-id", "username", "-username", "status", "-status", "created_at", "-created_at"
]
BOTS = Listing(
    "bots_list",
    key=(ID,),
    sorts=(ID, Column("username", str), Column("status", str), CREATED),
    sort_type=BotsSort,
)


class BotQuery(Paged, kw_only=True):
    sort: BotsSort = "id"


DeadSort = Literal[
    "id", "-id", "bot_id", "-bot_id", "attempt", "-attempt", "received_at", "-received_at"
]
DEAD = Listing(
    "dead_updates_list",
    key=(ID,),
    sorts=(ID, Column("bot_id", int), Column("attempt", int), Column("received_at", dt.datetime)),
    sort_type=DeadSort,
)


class DeadQuery(Paged, kw_only=True):
    sort: DeadSort = "id"


class Bots:
    def __init__(self, clock: Clock, box: SecretBox, botedge: Internal) -> None:
        self.clock = clock
        self.box = box
        self.botedge = botedge

    async def list_bots(self, request: Request, caller: Caller) -> Response:
        found = await BOTS.page(request, query(request, BotQuery), {})
        return answer(mapped(found, self._bot))

    def _bot(self, row: dict[str, Any]) -> Bot:
        try:
            token = self.box.open(row["token_encrypted"])
            shown: str | None = "..." + token[-4:]
        except SecretBoxError:
            shown = None
        return Bot(
            id=row["id"],
            telegram_bot_id=row["telegram_bot_id"],
            username=row["username"],
            mode=row["mode"],
            status=row["status"],
            token=shown,
            token_invalid=row["token_invalid_at"] is not None,
            last_error=row["last_error"],
            last_error_at=row["last_error_at"],
            created_at=row["created_at"],
            removed_at=row["removed_at"],
        )

    async def add_bot(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewBot, limit=4096)
        answer = await self.botedge.ask(
            "POST", "/internal/bots", {"token": body.token, "mode": body.mode}
        )
        return await relay_audited(
            request, caller, self.clock, answer, 201, "bots.add", lambda bot: f"bot:{bot['id']}"
        )

    async def pause(self, request: Request, caller: Caller) -> Response:
        """Nobody sends for it and its webhook answers 404 until it is resumed."""
        return await self._change(request, caller, "pause")

    async def resume(self, request: Request, caller: Caller) -> Response:
        return await self._change(request, caller, "resume")

    async def remove(self, request: Request, caller: Caller) -> Response:
        return await self._change(request, caller, "remove")

    async def _change(self, request: Request, caller: Caller, change: str) -> Response:
        bot_id = path_id(request, "bot_id", "bot")
        answer = await self.botedge.ask("POST", f"/internal/bots/{bot_id}/{change}")
        return await relay_audited(
            request, caller, self.clock, answer, 200, f"bots.{change}", f"bot:{bot_id}"
        )

    async def list_dead(self, request: Request, caller: Caller) -> Response:
        found = await DEAD.page(request, query(request, DeadQuery), {})
        return answer(converted(found, DeadUpdate))

    async def replay(self, request: Request, caller: Caller) -> Response:
        inbox_id = int(request.path_params["inbox_id"])
        if inbox_id >= 2**63:
            raise errors.NotDead("no dead update with that id")
        answer = await self.botedge.ask("POST", f"/internal/inbox/{inbox_id}/replay")
        return await relay_audited(
            request,
            caller,
            self.clock,
            answer,
            200,
            "inbox.replay",
            f"inbox:{inbox_id}",
            lambda _: None,
        )
