"""Bots and their dead updates, for the owner's panel.

Adding a bot and replaying an update are botedge's to do (only botedge calls Telegram): the
panel forwards them to botedge's internal endpoints and hands botedge's answers back unchanged.
A bot's token is shown only as its last four characters, decrypted in memory.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from panel_api import store
from panel_api.access import Caller, cursor_after, page
from panel_api.internal import Internal, relayed
from shared.clock import Clock
from shared.errors import Problem, json_body
from shared.logging import request_id
from shared.secretbox import SecretBox, SecretBoxError
from shared.web import runtime


class NewBot(msgspec.Struct, forbid_unknown_fields=True):
    token: Annotated[str, msgspec.Meta(max_length=200)]
    mode: Literal["polling", "webhook"] = "polling"


class Bots:
    def __init__(self, clock: Clock, box: SecretBox, botedge: Internal) -> None:
        self.clock = clock
        self.box = box
        self.botedge = botedge

    async def list_bots(self, request: Request, caller: Caller) -> Response:
        where = page(request)
        async with store.connection(runtime(request).pool) as conn:
            rows = await store.bots_page(conn, where.position or 0, where.limit + 1)
        shown = rows[: where.limit]
        return JSONResponse(
            {
                "items": [self._bot(row) for row in shown],
                "next_cursor": cursor_after(shown[-1]["id"]) if len(rows) > where.limit else None,
            }
        )

    def _bot(self, row: dict[str, Any]) -> dict[str, Any]:
        try:
            token = self.box.open(row["token_encrypted"])
            shown = "..." + token[-4:]
        except SecretBoxError:
            shown = None
        return {
            "id": row["id"],
            "telegram_bot_id": row["telegram_bot_id"],
            "username": row["username"],
            "mode": row["mode"],
            "status": row["status"],
            "token": shown,
            "token_invalid": row["token_invalid_at"] is not None,
            "last_error": row["last_error"],
            "last_error_at": _iso(row["last_error_at"]),
            "created_at": _iso(row["created_at"]),
        }

    async def add_bot(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewBot, limit=4096)
        answer = await self.botedge.ask(
            "POST", "/internal/bots", {"token": body.token, "mode": body.mode}
        )
        if answer.status_code == 201:
            added = answer.json()
            await self._audit(request, caller, "bots.add", f"bot:{added['id']}", added)
        return relayed(answer)

    async def list_dead(self, request: Request, caller: Caller) -> Response:
        where = page(request)
        async with store.connection(runtime(request).pool) as conn:
            rows = await store.dead_updates_page(conn, where.position or 0, where.limit + 1)
        shown = rows[: where.limit]
        items = [
            {k: _iso(v) if isinstance(v, dt.datetime) else v for k, v in row.items()}
            for row in shown
        ]
        return JSONResponse(
            {
                "items": items,
                "next_cursor": cursor_after(shown[-1]["id"]) if len(rows) > where.limit else None,
            }
        )

    async def replay(self, request: Request, caller: Caller) -> Response:
        inbox_id = int(request.path_params["inbox_id"])
        if inbox_id >= 2**63:
            raise Problem(404, "not-dead", "no dead update with that id")
        answer = await self.botedge.ask("POST", f"/internal/inbox/{inbox_id}/replay")
        if answer.status_code == 200:
            await self._audit(request, caller, "inbox.replay", f"inbox:{inbox_id}", None)
        return relayed(answer)

    async def _audit(
        self, request: Request, caller: Caller, action: str, target: str, after: Any
    ) -> None:
        """After botedge made the write (it owns bots and the inbox): the panel's record of
        who asked for it."""
        async with store.connection(runtime(request).pool) as conn:
            await store.audit(
                conn,
                member_id=caller.id,
                action=action,
                target=target,
                before=None,
                after=after,
                now=self.clock.now(),
                request_id=request_id.get(),
            )


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
