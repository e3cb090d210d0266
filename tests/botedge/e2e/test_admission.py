"""Admission tied to the payer, through the simulated Telegram: join requests approved for
payers and declined for others with the pay link; intruders removed, admins and the
whitelisted kept."""

from __future__ import annotations

from typing import Any

from botedge.words import FSI, PDI
from tests.botedge.e2e.conftest import FAST_ACCESS, MANAGER, PAID, PAYER, Shop
from tests.conftest import HTTP

STRANGER, ADMIN, FRIEND, LISTED_ADMIN = 7402, 7403, 7404, 7405


def member_status(shop: Shop, user: int) -> str:
    answer = HTTP.post(
        f"{shop.edge.sim.url}/bot{shop.token}/getChatMember",
        json={"chat_id": PAID, "user_id": user},
        timeout=10,
    ).json()
    return str(answer["result"]["status"]) if answer["ok"] else "unknown"


def outbox(shop: Shop, method: str) -> list[dict[str, Any]]:
    rows = shop.edge.query(
        "SELECT payload FROM outbox WHERE method = %s AND state = 'sent' ORDER BY id", method
    )
    return [row[0] for row in rows]


def test_join_request__payer_approved_stranger_told_how_to_pay_then_declined(
    shop: Shop,
) -> None:
    edge = shop.edge
    edge.query("UPDATE channels SET admission = 'join_request' RETURNING id")
    edge.start_worker(**FAST_ACCESS)
    shop.pay(PAYER, "pay-1")
    edge.wait_until(lambda: len(shop.sent(PAYER)) == 1, 60, "the join link")
    assert "Ask to join with this link" in shop.sent(PAYER)[0]["text"]
    [(link,)] = edge.query("SELECT join_request_link FROM channels")
    assert link is not None
    # Telegram has it; the sender records it sent once Telegram's answer is back.
    edge.wait_until(lambda: len(outbox(shop, "sendMessage")) == 1, 30, "the link recorded sent")
    [grant] = outbox(shop, "sendMessage")
    assert grant["reply_markup"]["inline_keyboard"][0][0]["url"] == link

    # The payer asks through the link: approved, and in.
    asked = edge.sim_post("/_sim/join", {"chat_id": PAID, "user_id": PAYER, "invite_link": link})
    assert asked["requested"] is True
    edge.wait_until(lambda: member_status(shop, PAYER) == "member", 30, "the payer approved")

    # A stranger asks through the same link: told how to pay, then declined.
    edge.sim_post("/_sim/join", {"chat_id": PAID, "user_id": STRANGER, "invite_link": link})
    edge.wait_until(lambda: bool(outbox(shop, "declineChatJoinRequest")), 30, "the decline")
    assert member_status(shop, STRANGER) == "left"
    [told] = shop.sent(STRANGER)
    assert told["text"] == f"<b>{FSI}Paid{PDI}</b> is for paying members. Pay to join:"
    calls = [
        c["method"]
        for c in edge.sim_get("/_sim/calls")
        if c["method"] in ("sendmessage", "declinechatjoinrequest")
        and c["status"] == 200
        and (c["chat_id"] in (STRANGER, PAID))
    ]
    # The message first: after the decline it could not be delivered.
    assert calls[-2:] == ["sendmessage", "declinechatjoinrequest"]
    edge.wait_until(
        lambda: any(m["chat_id"] == STRANGER for m in outbox(shop, "sendMessage")),
        30,
        "the message recorded sent",
    )
    [stranger_message] = [m for m in outbox(shop, "sendMessage") if m["chat_id"] == STRANGER]
    assert stranger_message["reply_markup"]["inline_keyboard"][0][0]["url"] == (
        f"https://t.me/bot{MANAGER}?start=pay_{shop.channel}"
    )
    # One link for the channel, made once.
    assert len(shop.calls("createchatinvitelink")) == 1


def test_intruders__removed_and_told_admins_and_the_whitelisted_kept(shop: Shop) -> None:
    edge = shop.edge
    edge.query(
        "INSERT INTO channel_whitelist (channel_id, telegram_user_id) VALUES (%s, %s)"
        " RETURNING channel_id",
        shop.channel,
        FRIEND,
    )
    # An admin the bot learns of from getChatAdministrators when its rights are checked.
    edge.sim_post("/_sim/chats", {"id": PAID, "members": {str(LISTED_ADMIN): "administrator"}})
    edge.query(
        "INSERT INTO bot_channels (bot_id, channel_id) VALUES (%s, %s) RETURNING bot_id",
        shop.bot_id,
        shop.channel,
    )
    edge.start_worker(**FAST_ACCESS)
    edge.wait_until(
        lambda: LISTED_ADMIN in edge.query("SELECT admin_ids FROM bot_channels")[0][0],
        30,
        "the admins read",
    )
    # The stranger has talked to the bot, so it may write to them.
    edge.sim_post("/_sim/messages", {"bot_id": MANAGER, "user_id": STRANGER, "text": "/start"})
    edge.wait_until(lambda: len(shop.sent(STRANGER)) == 1, 30, "the welcome")

    edge.sim_post("/_sim/join", {"chat_id": PAID, "user_id": STRANGER})
    edge.sim_post("/_sim/join", {"chat_id": PAID, "user_id": FRIEND})
    # Telegram announces the listed admin as a plain member joining (they came back).
    edge.sim_post("/_sim/join", {"chat_id": PAID, "user_id": LISTED_ADMIN})
    # An admin's arrival, as Telegram announces a promoted member.
    admin_joined = {
        "chat": {"id": PAID, "type": "channel", "title": "Paid"},
        "from": {"id": ADMIN, "is_bot": False, "first_name": "A"},
        "date": 1,
        "old_chat_member": {
            "user": {"id": ADMIN, "is_bot": False, "first_name": "A"},
            "status": "left",
        },
        "new_chat_member": {
            "user": {"id": ADMIN, "is_bot": False, "first_name": "A"},
            "status": "administrator",
        },
    }
    edge.sim_post("/_sim/updates", {"bot_id": MANAGER, "update": {"chat_member": admin_joined}})
    edge.wait_until(lambda: len(shop.sent(STRANGER)) == 2, 30, "the stranger told")
    assert shop.sent(STRANGER)[1]["text"] == (
        f"You were removed from <b>{FSI}Paid{PDI}</b>: it is for paying members. Pay to join:"
    )
    edge.wait_until(
        lambda: edge.query("SELECT count(*) FROM inbox WHERE state <> 'done'") == [(0,)],
        30,
        "every update handled",
    )
    assert member_status(shop, STRANGER) == "left"
    assert member_status(shop, FRIEND) == "member"
    assert member_status(shop, LISTED_ADMIN) == "member"
    # Telegram has had them; each is recorded sent once its answer is back.
    edge.wait_until(lambda: len(outbox(shop, "unbanChatMember")) == 1, 30, "the unban recorded")
    bans = [p["user_id"] for p in outbox(shop, "banChatMember")]
    assert bans == [STRANGER]
    unbans = outbox(shop, "unbanChatMember")
    assert [(u["user_id"], u["only_if_banned"]) for u in unbans] == [(STRANGER, True)]
    # Telegram tells of the ban and the unban as it tells of a leave: the stranger is no
    # longer counted in the channel.
    edge.wait_until(
        lambda: (
            edge.query(
                "SELECT cm.status, cm.is_member FROM channel_members cm"
                " JOIN people p ON p.id = cm.person_id WHERE p.telegram_user_id = %s",
                STRANGER,
            )
            == [("left", False)]
        ),
        30,
        "the stranger out of channel_members",
    )


def test_link_again__a_fresh_single_use_link_and_the_lost_one_revoked(shop: Shop) -> None:
    edge = shop.edge
    edge.start_worker(**FAST_ACCESS)
    shop.pay(PAYER, "pay-1")
    edge.wait_until(lambda: len(shop.sent(PAYER)) == 1, 60, "the first link")
    [(lost,)] = edge.query("SELECT link FROM access_links")

    edge.sim_post("/_sim/messages", {"bot_id": MANAGER, "user_id": PAYER, "text": "/link"})
    edge.wait_until(lambda: len(shop.sent(PAYER)) == 2, 30, "the link again")
    assert shop.sent(PAYER)[1]["text"] == (
        f"Your link to {FSI}Paid{PDI}: it works once, and the one sent before no longer does."
    )
    [(fresh,)] = edge.query("SELECT link FROM access_links")
    assert fresh != lost
    assert len(shop.calls("revokechatinvitelink")) == 1
    refused = HTTP.post(
        f"{edge.sim.url}/_sim/join",
        json={"chat_id": PAID, "user_id": PAYER, "invite_link": lost},
        timeout=10,
    )
    assert (refused.status_code, refused.json()["error"]) == (400, "the link was revoked")
    edge.sim_post("/_sim/join", {"chat_id": PAID, "user_id": PAYER, "invite_link": fresh})
    edge.wait_until(
        lambda: edge.query("SELECT is_member FROM channel_members") == [(True,)], 30, "inside"
    )
    edge.sim_post("/_sim/messages", {"bot_id": MANAGER, "user_id": PAYER, "text": "/link"})
    edge.wait_until(lambda: len(shop.sent(PAYER)) == 3, 30, "the answer")
    assert shop.sent(PAYER)[2]["text"] == f"You are already in {FSI}Paid{PDI}."
    # Someone with no membership is told so.
    edge.sim_post("/_sim/messages", {"bot_id": MANAGER, "user_id": STRANGER, "text": "/link"})
    edge.wait_until(lambda: len(shop.sent(STRANGER)) == 1, 30, "no access")
    assert shop.sent(STRANGER)[0]["text"].startswith("You have no paid access")
