"""Campaigns for the owner's panel: a named invite link into a channel per sponsor or ad, and
who joined through it.

The link is made by botedge (only botedge calls Telegram: `POST /internal/campaigns/link`);
the panel keeps the campaign. botedge's gate credits each join through the link once per
person and marks the first leave after it.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import errors, store
from panel_api.access import (
    CREATED,
    ID,
    Caller,
    Column,
    Listing,
    Paged,
    answer,
    audit,
    mapped,
    path_id,
    query,
)
from panel_api.fields import Id
from panel_api.internal import Internal, relayed
from shared.clock import Clock
from shared.db import Connection
from shared.errors import json_body
from shared.telegram_text import utf16_units
from shared.web import runtime

Q = store.Q
# Telegram's limit on an invite link's name, which it counts in UTF-16 code units.
NAME_LIMIT = 32
PUBLIC_WARNING = (
    "The channel is public: Telegram leaves the link out when someone joins a public channel"
    " directly, so joins are credited reliably only on private channels or join-request links."
)


class NewCampaign(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]
    bot_id: Id
    channel_id: Id


class Campaign(msgspec.Struct):
    id: int
    name: str
    bot_id: int
    bot_username: str
    channel_id: int
    channel_title: str
    channel_username: str | None
    invite_link: str
    created_at: dt.datetime
    # People who joined through the link; of them, who left since; the difference.
    joins: int
    leaves: int
    net: int
    # The channel has an @username: joins straight into it carry no link.
    public: bool = False
    warning: str | None = None


class CampaignDay(msgspec.Struct):
    day: dt.date
    joins: int
    leaves: int


class CampaignDetail(msgspec.Struct):
    campaign: Campaign
    # The last 30 days of the workspace's zone, today last.
    days: list[CampaignDay]


CampaignsSort = Literal[
    "id", "-id", "name", "-name", "joins", "-joins", "net", "-net", "created_at", "-created_at"
]
CAMPAIGNS = Listing(
    "campaigns_list",
    key=(ID,),
    sorts=(
        ID,
        Column("name", str),
        Column("joins", int),
        Column("net", int),
        CREATED,
    ),
    sort_type=CampaignsSort,
)


class CampaignQuery(Paged, kw_only=True):
    bot: Id | None = None
    channel: Id | None = None
    sort: CampaignsSort = "-id"


class Campaigns:
    def __init__(self, clock: Clock, botedge: Internal) -> None:
        self.clock = clock
        self.botedge = botedge

    async def campaigns(self, request: Request, caller: Caller) -> Response:
        where = query(request, CampaignQuery)
        found = await CAMPAIGNS.page(
            request, where, {"id": None, "bot_id": where.bot, "channel_id": where.channel}
        )
        return answer(mapped(found, _campaign))

    async def campaign(self, request: Request, caller: Caller) -> Response:
        campaign_id = path_id(request, "campaign_id", "campaign")
        async with store.connection(runtime(request).pool) as conn:
            campaign = await _one(conn, campaign_id)
            days = await store.rows(
                conn, "campaign_days", {"id": campaign_id, "now": self.clock.now()}
            )
        return answer(CampaignDetail(campaign, msgspec.convert(days, list[CampaignDay])))

    async def add_campaign(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewCampaign, limit=4096)
        name = body.name.strip()
        if not name:
            raise errors.InvalidValue("a campaign needs a name", field="name", code="required")
        if utf16_units(name) > NAME_LIMIT:
            raise errors.InvalidValue(
                f"Telegram takes a link name of at most {NAME_LIMIT} characters",
                field="name",
                code="too-long",
            )
        params = {"bot_id": body.bot_id, "channel_id": body.channel_id, "name": name}
        async with store.connection(runtime(request).pool) as conn:
            await _check_target(conn, params)
        made = await self.botedge.ask("POST", "/internal/campaigns/link", params)
        if made.status_code != 201:
            return relayed(made)
        link = made.json()["invite_link"]
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            cur = await conn.execute(
                Q["insert_campaign"], {**params, "invite_link": link, "now": self.clock.now()}
            )
            row = await cur.fetchone()
            if row is None:
                # Named the same meanwhile: the link made for it stays unused in Telegram.
                raise errors.InvalidValue(
                    "the channel already has a campaign by that name", field="name", code="taken"
                )
            campaign = await _one(conn, int(row["id"]))
            await audit(
                conn,
                caller,
                self.clock,
                "campaigns.add",
                f"campaign:{campaign.id}",
                None,
                {**params, "invite_link": link},
            )
        return answer(campaign, status=201)


async def _check_target(conn: Connection, params: dict[str, Any]) -> None:
    """The bot, the channel and the name, checked before Telegram is asked for a link."""
    cur = await conn.execute(Q["campaign_target"], params)
    found = await cur.fetchone()
    if found is None or found["bot_status"] is None:
        raise errors.InvalidValue("no bot by that id", field="bot_id", code="not-found")
    if found["bot_status"] != "active":
        raise errors.InvalidValue(
            f"the bot is {found['bot_status']}: only an active bot makes links",
            field="bot_id",
            code="invalid",
        )
    if not found["channel_found"]:
        raise errors.InvalidValue("no channel by that id", field="channel_id", code="not-found")
    if found["name_taken"]:
        raise errors.InvalidValue(
            "the channel already has a campaign by that name", field="name", code="taken"
        )


async def _one(conn: Connection, campaign_id: int) -> Campaign:
    cur = await conn.execute(
        Q["campaigns_list"], {"id": campaign_id, "bot_id": None, "channel_id": None}
    )
    row = await cur.fetchone()
    if row is None:
        raise errors.NotFound("no campaign by that id")
    return _campaign(dict(row))


def _campaign(row: dict[str, Any]) -> Campaign:
    campaign = msgspec.convert(row, Campaign, strict=False)
    campaign.public = row["channel_username"] is not None
    campaign.warning = PUBLIC_WARNING if campaign.public else None
    return campaign
