"""Campaign links end to end: botedge makes a named invite link in the simulated Telegram, people
join and leave through it, and real worker processes credit each person's join once."""

from __future__ import annotations

from typing import Any

import httpx

from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP, SECRETS

PRIVATE, PUBLIC, ELSEWHERE = -1001000000701, -1001000000702, -1001000000703
BOT = 5550701


def make_link(edge: Edge, bot_id: int, channel_id: int, name: str) -> httpx.Response:
    assert edge.api is not None
    return HTTP.post(
        f"{edge.api.url}/internal/campaigns/link",
        json={"bot_id": bot_id, "channel_id": channel_id, "name": name},
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
        timeout=30,
    )


def setup(edge: Edge) -> tuple[int, dict[int, int]]:
    """A polling bot, admin in a private and a public channel and not in a third; their
    channel rows by chat id."""
    bot_id, _, _ = edge.add_bot(BOT, mode="polling")
    rows = {}
    for chat, username, admins in (
        (PRIVATE, None, [BOT]),
        (PUBLIC, "open_news", [BOT]),
        (ELSEWHERE, None, []),
    ):
        edge.sim_post(
            "/_sim/chats",
            {"id": chat, "type": "channel", "username": username, "admin_bots": admins},
        )
        [(row,)] = edge.query(
            "INSERT INTO channels (telegram_chat_id, title, username) VALUES (%s, 'C', %s)"
            " RETURNING id",
            chat,
            username,
        )
        rows[chat] = int(row)
    return bot_id, rows


def campaign(edge: Edge, bot_id: int, channel_id: int, name: str) -> tuple[int, str]:
    made = make_link(edge, bot_id, channel_id, name)
    assert made.status_code == 201, made.text
    link = made.json()["invite_link"]
    [(campaign_id,)] = edge.query(
        "INSERT INTO campaigns (name, bot_id, channel_id, invite_link, created_at)"
        " VALUES (%s, %s, %s, %s, now()) RETURNING id",
        name,
        bot_id,
        channel_id,
        link,
    )
    return int(campaign_id), str(link)


def polling(edge: Edge) -> None:
    """The worker has asked for updates once, so Telegram knows it wants `chat_member`."""
    edge.wait_until(
        lambda: any(c["status"] == 200 for c in edge.sim_get("/_sim/calls", method="getupdates")),
        30,
        "the first getUpdates",
    )


def handled(edge: Edge, update_ids: list[int]) -> None:
    edge.wait_until(
        lambda: (
            edge.query(
                "SELECT count(*) FROM inbox WHERE state = 'done' AND update_id = ANY(%s)",
                update_ids,
            )[0][0]
            == len(update_ids)
        ),
        30,
        f"updates {update_ids} handled",
    )


def joins(edge: Edge, campaign_id: int) -> list[tuple[Any, ...]]:
    return edge.query(
        "SELECT p.telegram_user_id, j.left_at IS NOT NULL FROM campaign_joins j"
        " JOIN people p ON p.id = j.person_id WHERE j.campaign_id = %s ORDER BY 1",
        campaign_id,
    )


def join(edge: Edge, user: int, **how: Any) -> list[int]:
    return list(edge.sim_post("/_sim/join", {"user_id": user, **how})["update_ids"])


def test_campaign__the_link_is_named_and_credits_each_person_once(edge: Edge) -> None:
    bot_id, channels = setup(edge)
    edge.start_api()
    edge.start_worker()
    polling(edge)
    spring, link = campaign(edge, bot_id, channels[PRIVATE], "Spring sponsor")
    [first] = join(edge, 9001, invite_link=link)
    handled(edge, [first])
    assert joins(edge, spring) == [(9001, False)]
    # Telegram made the link with the campaign's name, and names it in the join.
    [(payload,)] = edge.query("SELECT payload FROM inbox WHERE update_id = %s", first)
    assert payload["chat_member"]["invite_link"]["name"] == "Spring sponsor"
    assert payload["chat_member"]["invite_link"]["invite_link"] == link

    # The same join told again (Telegram redelivers under a new update id): still one.
    again = edge.sim_post(
        "/_sim/updates", {"bot_id": BOT, "update": {"chat_member": payload["chat_member"]}}
    )["update_ids"]
    handled(edge, again)
    assert joins(edge, spring) == [(9001, False)]

    # Leave, then rejoin through the same link: one join, one leave.
    left = edge.sim_post("/_sim/leave", {"chat_id": PRIVATE, "user_id": 9001})["update_ids"]
    handled(edge, left)
    assert joins(edge, spring) == [(9001, True)]
    handled(edge, join(edge, 9001, invite_link=link))
    assert joins(edge, spring) == [(9001, True)]
    [(left_at, joined_at)] = edge.query(
        "SELECT left_at, joined_at FROM campaign_joins WHERE campaign_id = %s", spring
    )
    assert left_at >= joined_at
    # Counted for the statistics as credited: one join, one leave.
    assert edge.query(
        "SELECT kind, count(*) FROM stat_events WHERE campaign_id = %s GROUP BY kind ORDER BY 1",
        spring,
    ) == [("campaign_join", 1), ("campaign_leave", 1)]

    # Through another link of the same channel, or straight in by id: nothing credited.
    other = make_link(edge, bot_id, channels[PRIVATE], "Not a campaign").json()["invite_link"]
    handled(edge, join(edge, 9002, invite_link=other))
    handled(edge, join(edge, 9003, chat_id=PRIVATE))
    assert joins(edge, spring) == [(9001, True)]
    assert {
        u
        for (u,) in edge.query(
            "SELECT p.telegram_user_id FROM channel_members m"
            " JOIN people p ON p.id = m.person_id WHERE m.is_member"
        )
    } == {9001, 9002, 9003}


def test_campaign__a_public_channel_join_names_no_link_and_credits_nothing(edge: Edge) -> None:
    bot_id, channels = setup(edge)
    edge.start_api()
    edge.start_worker()
    polling(edge)
    made = make_link(edge, bot_id, channels[PUBLIC], "Public one")
    assert made.status_code == 201, made.text
    assert made.json()["public"] is True
    assert make_link(edge, bot_id, channels[PRIVATE], "Private one").json()["public"] is False
    public, link = campaign(edge, bot_id, channels[PUBLIC], "Public two")
    [update] = join(edge, 9101, invite_link=link)
    handled(edge, [update])
    [(payload,)] = edge.query("SELECT payload FROM inbox WHERE update_id = %s", update)
    assert "invite_link" not in payload["chat_member"]
    assert joins(edge, public) == []


def test_campaign_link__refused_where_the_bot_may_not_invite_and_when_telegram_is_down(
    edge: Edge,
) -> None:
    bot_id, channels = setup(edge)
    edge.start_api()
    refused = make_link(edge, bot_id, channels[ELSEWHERE], "Nowhere")
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"] == [{"field": "bot_id", "code": "no-rights"}]
    assert "not enough rights" in refused.json()["detail"]
    unknown = make_link(edge, bot_id, 2**31 - 1, "Nothing")
    assert unknown.status_code == 422, unknown.text
    assert unknown.json()["errors"] == [{"field": "channel_id", "code": "not-found"}]
    too_long = make_link(edge, bot_id, channels[PRIVATE], "x" * 33)
    assert too_long.status_code == 422, too_long.text
    assert too_long.json()["errors"] == [{"field": "name", "code": "too-long"}]

    edge.sim_post("/_sim/faults", {"rate_5xx": 1.0})
    down = make_link(edge, bot_id, channels[PRIVATE], "Later")
    assert down.status_code == 503, down.text
    assert down.json()["type"] == "/problems/telegram-unavailable"
    assert down.headers["retry-after"]
