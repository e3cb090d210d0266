"""What billing and botedge keep about people and money, read for the owner: each bot's
visitors, memberships and their history, invoices, payments, and the gateway deliveries that
need a look. Creating an invoice is billing's to do: the panel asks billing and relays."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import store
from panel_api.access import Caller, Page, cursor_after, page
from panel_api.internal import Internal, relayed
from shared.errors import Problem, json_body
from shared.web import runtime

# Composite keys ride in one cursor number: (high << 31) | low, both int4 ids.
_LOW = 2**31
_ATTENTION = ("orphan", "amount_mismatch", "conflict", "gateway_mismatch")


class NewInvoice(msgspec.Struct, forbid_unknown_fields=True):
    telegram_user_id: Annotated[int, msgspec.Meta(gt=0, le=2**63 - 1)]
    channel_id: Annotated[int, msgspec.Meta(gt=0, lt=2**31)]
    gateway: str


def _answer(items: list[dict[str, Any]], cursor: str | None) -> Response:
    # msgspec writes datetimes as ISO 8601 and Decimals as strings: exact amounts.
    body = msgspec.json.encode({"items": items, "next_cursor": cursor})
    return Response(body, media_type="application/json")


def _split(position: int | None) -> tuple[int, int]:
    return divmod(position or 0, _LOW)


def _int_filter(request: Request, name: str, below: int = 2**31) -> int | None:
    value = request.query_params.get(name)
    if value is None:
        return None
    if not (value.isascii() and value.isdigit()) or not 0 < int(value) < below:
        raise Problem(422, "invalid-values", f"{name} is an id")
    return int(value)


def _choice(request: Request, name: str, choices: tuple[str, ...]) -> str | None:
    value = request.query_params.get(name)
    if value is not None and value not in choices:
        raise Problem(422, "invalid-values", f"{name} is one of {', '.join(choices)}")
    return value


class Ledger:
    def __init__(self, billing: Internal) -> None:
        self.billing = billing

    async def _list(
        self, request: Request, query: str, params: dict[str, Any], where: Page
    ) -> list[dict[str, Any]]:
        async with store.connection(runtime(request).pool) as conn:
            return await store.rows(conn, query, {**params, "limit": where.limit + 1})

    async def people(self, request: Request, caller: Caller) -> Response:
        where = page(request)
        bot, person = _split(where.position)
        found = await self._list(
            request,
            "people_page",
            {"after_bot": bot, "after_person": person, "bot_id": _int_filter(request, "bot")},
            where,
        )
        shown = found[: where.limit]
        more = len(found) > where.limit
        last = shown[-1] if shown else None
        cursor = cursor_after(last["bot_id"] * _LOW + last["person_id"]) if more and last else None
        return _answer(shown, cursor)

    async def memberships(self, request: Request, caller: Caller) -> Response:
        where = page(request)
        person, channel = _split(where.position)
        found = await self._list(
            request,
            "memberships_page",
            {
                "after_person": person,
                "after_channel": channel,
                "status": _choice(request, "status", ("active", "grace", "expired")),
                "channel_id": _int_filter(request, "channel"),
            },
            where,
        )
        shown = found[: where.limit]
        last = shown[-1] if shown else None
        more = len(found) > where.limit
        cursor = (
            cursor_after(last["person_id"] * _LOW + last["channel_id"]) if more and last else None
        )
        return _answer(shown, cursor)

    async def history(self, request: Request, caller: Caller) -> Response:
        keys = {
            "person_id": int(request.path_params["person_id"]),
            "channel_id": int(request.path_params["channel_id"]),
        }
        if any(value >= _LOW for value in keys.values()):
            raise Problem(404, "not-found", "no such membership")
        async with store.connection(runtime(request).pool) as conn:
            events = await store.rows(conn, "membership_history", keys)
        if not events:
            raise Problem(404, "not-found", "no such membership")
        return _answer(events, None)

    async def _newest_first(
        self, request: Request, query: str, filters: dict[str, Any]
    ) -> Response:
        where = page(request)
        found = await self._list(request, query, {"before_id": where.position, **filters}, where)
        shown = found[: where.limit]
        more = len(found) > where.limit
        return _answer(shown, cursor_after(shown[-1]["id"]) if more and shown else None)

    async def invoices(self, request: Request, caller: Caller) -> Response:
        status = _choice(request, "status", ("open", "paid", "expired", "cancelled"))
        return await self._newest_first(request, "invoices_page", {"status": status})

    async def payments(self, request: Request, caller: Caller) -> Response:
        applied = _choice(request, "applied", ("true", "false"))
        filters = {
            "gateway": request.query_params.get("gateway"),
            "applied": None if applied is None else applied == "true",
            "flag": request.query_params.get("flag"),
        }
        return await self._newest_first(request, "payments_page", filters)

    async def gateway_events(self, request: Request, caller: Caller) -> Response:
        outcome = _choice(request, "outcome", _ATTENTION)
        return await self._newest_first(request, "gateway_events_page", {"outcome": outcome})

    async def create_invoice(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewInvoice, limit=4096)
        answer = await self.billing.ask("POST", "/internal/invoices", msgspec.to_builtins(body))
        return relayed(answer)
