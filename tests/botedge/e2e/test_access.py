"""Channel access from billing, end to end: a payment to billing leads to one invite link sent,
an expiry to one removal, in order, with a worker killed mid-way."""

from __future__ import annotations

import datetime as dt
import signal

import pytest

from botedge.words import FSI, PDI
from tests.billing.e2e import gateways
from tests.botedge.e2e.conftest import FAST_ACCESS, MANAGER, PAID, PAYER, Shop
from tests.conftest import HTTP, SECRETS


@pytest.mark.slow(26)
def test_payment__one_invite_link_sent_even_with_a_worker_killed_mid_call(shop: Shop) -> None:
    edge = shop.edge
    # Slow Telegram: the first worker is killed while it waits on the invite link.
    edge.sim_post("/_sim/faults", {"delay_ms": 2000})
    first = edge.start_worker(**FAST_ACCESS)
    shop.pay(PAYER, "pay-1")
    edge.wait_until(
        lambda: edge.sim_get("/_sim/inflight").get("createchatinvitelink", 0) > 0,
        30,
        "the invite link being made",
    )
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait()
    edge.sim_post("/_sim/faults", {"delay_ms": 0})
    edge.start_worker(**FAST_ACCESS)
    edge.wait_until(lambda: shop.events() == [("grant", "done")], 60, "the grant done")
    edge.wait_until(lambda: len(shop.sent(PAYER)) == 1, 30, "the link sent")
    [message] = shop.sent(PAYER)
    assert f"access to {FSI}Paid{PDI} is open" in message["text"]
    # The killed worker's link may exist too; only one was ever sent.
    assert 1 <= len(shop.calls("createchatinvitelink")) <= 2
    assert edge.query("SELECT count(*) FROM outbox WHERE dedupe_key LIKE 'access:%%'") == [(1,)]


def test_expiry__one_removal_and_a_revoke_never_overtakes_its_grant(shop: Shop) -> None:
    edge = shop.edge
    # The grant cannot be done yet: no manager bot. The revoke behind it must wait.
    edge.query("UPDATE channels SET manager_bot_id = NULL RETURNING id")
    shop.pay(PAYER, "pay-1")
    edge.sim_post("/_sim/join", {"chat_id": PAID, "user_id": PAYER})
    # The membership runs out (grace included) and the sweep expires it.
    edge.query(
        "UPDATE memberships SET expires_at = %s, next_check_at = %s RETURNING person_id",
        dt.datetime.now(dt.UTC) - dt.timedelta(days=5),
        dt.datetime.now(dt.UTC) - dt.timedelta(days=5),
    )
    assert shop.sweep()["to_expired"] == 1
    edge.start_worker(**FAST_ACCESS)
    edge.wait_until(
        lambda: edge.query("SELECT attempts FROM access_events WHERE kind = 'grant'")[0][0] >= 2,
        30,
        "the grant retried",
    )
    # The grant is between tries or in its next one; the revoke behind it never tried.
    (grant, grant_state), revoke = shop.events()
    assert (grant, revoke) == ("grant", ("revoke", "pending"))
    assert grant_state in ("pending", "processing")
    assert edge.query("SELECT attempts FROM access_events WHERE kind = 'revoke'") == [(0,)]
    assert shop.calls("banchatmember") == []

    edge.query("UPDATE channels SET manager_bot_id = %s RETURNING id", shop.bot_id)
    edge.wait_until(
        lambda: shop.events() == [("grant", "done"), ("revoke", "done")], 60, "both done"
    )
    links, bans = shop.calls("createchatinvitelink"), shop.calls("banchatmember")
    assert len(links) == 1 and len(bans) == 1
    assert links[0]["at"] <= bans[0]["started"]
    assert len(shop.calls("unbanchatmember")) == 1
    member = edge.sim_get("/_sim/calls", method="getchatmember")
    assert member, "the person's standing was asked before the removal"
    edge.wait_until(lambda: len(shop.sent(PAYER)) == 2, 30, "both messages")
    assert "has ended" in shop.sent(PAYER)[1]["text"]
    # The removal says how to come back.
    [(told,)] = edge.query("SELECT payload FROM outbox WHERE payload->>'text' LIKE '%%ended%%'")
    assert told["reply_markup"]["inline_keyboard"][0][0]["url"] == (
        f"https://t.me/bot{MANAGER}?start=pay_{shop.channel}"
    )


def test_revoke__the_chats_admins_are_never_removed(shop: Shop) -> None:
    edge = shop.edge
    edge.sim_post("/_sim/chats", {"id": PAID, "members": {str(PAYER): "administrator"}})
    gateways.set_membership(
        edge.database_url, PAYER, shop.channel, dt.datetime.now(dt.UTC) - dt.timedelta(days=9)
    )
    assert shop.sweep()["to_expired"] == 1
    edge.start_worker(**FAST_ACCESS)
    edge.wait_until(lambda: shop.events() == [("revoke", "done")], 60, "the revoke done")
    assert shop.calls("banchatmember") == []


def test_grant__no_manager_bot_fails_after_its_attempts_with_the_reason(shop: Shop) -> None:
    edge = shop.edge
    edge.query("UPDATE channels SET manager_bot_id = NULL RETURNING id")
    shop.pay(PAYER, "pay-1")
    edge.start_worker(ACCESS_MAX_ATTEMPTS="3", **FAST_ACCESS)
    edge.wait_until(lambda: shop.events() == [("grant", "failed")], 60, "the grant failed")
    [(attempts, error)] = edge.query("SELECT attempts, last_error FROM access_events")
    assert attempts == 3
    assert "no manager bot" in error


@pytest.mark.slow(13)
def test_expiry__one_removal_even_with_a_worker_killed_mid_removal(shop: Shop) -> None:
    edge = shop.edge
    shop.pay(PAYER, "pay-1")
    first = edge.start_worker(**FAST_ACCESS)
    edge.wait_until(lambda: shop.events() == [("grant", "done")], 60, "the grant done")
    # The link is sent before the kill: a send cut between Telegram's answer and our record of
    # it is the one thing a crash can repeat, and it is not what this test is about.
    edge.wait_until(lambda: len(shop.sent(PAYER)) == 1, 30, "the link sent")
    edge.wait_until(
        lambda: edge.query("SELECT state FROM outbox") == [("sent",)], 30, "the send recorded"
    )
    edge.sim_post("/_sim/join", {"chat_id": PAID, "user_id": PAYER})
    # The join is seen while the payer still pays: an expired member's join is an intruder's.
    edge.wait_until(
        lambda: edge.query("SELECT is_member FROM channel_members") == [(True,)], 30, "the join"
    )
    edge.query(
        "UPDATE memberships SET expires_at = %s, next_check_at = %s RETURNING person_id",
        dt.datetime.now(dt.UTC) - dt.timedelta(days=5),
        dt.datetime.now(dt.UTC) - dt.timedelta(days=5),
    )
    # Slow Telegram: the worker is killed while its removal is under way.
    edge.sim_post("/_sim/faults", {"delay_ms": 2000})
    assert shop.sweep()["to_expired"] == 1
    edge.wait_until(
        lambda: any(
            edge.sim_get("/_sim/inflight").get(m, 0) for m in ("getchatmember", "banchatmember")
        ),
        30,
        "the removal under way",
    )
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait()
    edge.sim_post("/_sim/faults", {"delay_ms": 0})
    edge.start_worker(**FAST_ACCESS)
    edge.wait_until(
        lambda: shop.events() == [("grant", "done"), ("revoke", "done")], 60, "the revoke done"
    )
    edge.wait_until(lambda: len(shop.sent(PAYER)) == 2, 30, "the removal told")
    assert [m["text"] for m in shop.sent(PAYER)][1] == f"Your access to {FSI}Paid{PDI} has ended."
    # Removed, not banned: a later payment can let them back in.
    member = HTTP.post(
        f"{edge.sim.url}/bot{shop.token}/getChatMember",
        json={"chat_id": PAID, "user_id": PAYER},
        timeout=10,
    ).json()["result"]
    assert member["status"] == "left"
    assert edge.query("SELECT count(*) FROM outbox WHERE dedupe_key LIKE 'access:%%'") == [(2,)]


def test_expiry_notice__sent_with_the_pay_link_and_dropped_after_a_renewal(shop: Shop) -> None:
    edge = shop.edge
    expires = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(hours=70)
    person = gateways.set_membership(edge.database_url, PAYER, shop.channel, expires)
    for hours, period_end in ((72, expires), (24, expires - dt.timedelta(days=30))):
        # The second was written for a period a renewal has since replaced.
        edge.query(
            "INSERT INTO access_events (kind, person_id, channel_id, notice_key, notice_hours,"
            " expires_at, created_at) VALUES ('expiry_notice', %s, %s, %s, %s, %s, now())"
            " RETURNING id",
            person,
            shop.channel,
            f"{person}:{shop.channel}:{period_end.isoformat()}:{hours}",
            hours,
            period_end,
        )
    edge.start_worker(**FAST_ACCESS)
    edge.wait_until(
        lambda: shop.events() == [("expiry_notice", "done")] * 2, 60, "both notices handled"
    )
    edge.wait_until(lambda: len(shop.sent(PAYER)) == 1, 30, "the notice sent")
    ends = expires.strftime("%Y-%m-%d %H:%M UTC")
    assert shop.sent(PAYER)[0]["text"] == (
        f"Your access to {FSI}Paid{PDI} ends in 3 days, on {ends}. Renew to stay."
    )
    [(payload,)] = edge.query("SELECT payload FROM outbox")
    assert payload["reply_markup"]["inline_keyboard"] == [
        [{"text": "Renew", "url": f"https://t.me/bot{MANAGER}?start=pay_{shop.channel}"}]
    ]


def test_grant__after_expiry_welcomes_them_back(shop: Shop) -> None:
    edge = shop.edge
    gateways.set_membership(
        edge.database_url,
        PAYER,
        shop.channel,
        dt.datetime.now(dt.UTC) - dt.timedelta(days=40),
        status="expired",
    )
    shop.pay(PAYER, "pay-again")
    edge.start_worker(**FAST_ACCESS)
    edge.wait_until(lambda: len(shop.sent(PAYER)) == 1, 60, "the link sent")
    assert shop.sent(PAYER)[0]["text"].startswith(
        f"Welcome back! Payment received: your access to {FSI}Paid{PDI} is open again."
    )


def test_grant__to_someone_already_inside_sends_no_link(shop: Shop) -> None:
    edge = shop.edge
    person = gateways.add_person(edge.database_url, PAYER)
    edge.query(
        "INSERT INTO channel_members (channel_id, person_id, status, is_member, updated_at)"
        " VALUES (%s, %s, 'member', true, now()) RETURNING person_id",
        shop.channel,
        person,
    )
    granted = HTTP.post(
        f"{shop.billing.url}/internal/grants",
        json={
            "telegram_user_id": PAYER,
            "channel_id": shop.channel,
            "until": (dt.datetime.now(dt.UTC) + dt.timedelta(days=30)).isoformat(),
            "reason": "imported",
        },
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
        timeout=10,
    )
    assert granted.json()["applied"] is True
    edge.start_worker(**FAST_ACCESS)
    edge.wait_until(lambda: shop.events() == [("grant", "done")], 60, "the grant handled")
    assert shop.calls("createchatinvitelink") == []
    assert edge.query("SELECT count(*) FROM outbox") == [(0,)]
