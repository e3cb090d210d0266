"""What an access event comes to, decided without Telegram or the database: one case per kind
and per state of the membership it finds."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from botedge.access import (
    AccessContext,
    AccessEvent,
    AccessKind,
    Invite,
    InviteToAsk,
    Remove,
    Say,
    step_for,
)
from botedge.words import FSI, PDI, Words

NOW = dt.datetime(2026, 12, 7, 12, 0, tzinfo=dt.UTC)
ENDS = dt.datetime(2026, 12, 10, 12, 0, tzinfo=dt.UTC)
CTX = AccessContext(
    telegram_chat_id=-1001,
    title="Daily Signals",
    manager_bot_id=7,
    bot_username="signals_bot",
    admission="link",
    join_request_link=None,
    telegram_user_id=42,
    grace_days=3,
    membership_status="active",
    membership_expires_at=ENDS,
    from_status="active",
    cause="payment",
    inside=False,
    star_renewal=None,
)
RENEW_URL = "https://t.me/signals_bot?start=pay_5"
EN = Words().speech("en")
SIGNALS = f"{FSI}Daily Signals{PDI}"


def event(kind: AccessKind, **fields: object) -> AccessEvent:
    base = AccessEvent(1, kind, 5, 9, 3, ENDS, None)
    return dataclasses.replace(base, **fields)


def button(step: object) -> str:
    assert isinstance(step, Say | Remove)
    markup = step.message if isinstance(step, Say) else step.renew
    return str(markup["reply_markup"]["inline_keyboard"][0][0]["url"])


def test_grant__outside_a_single_use_invite_welcoming_back_after_an_expiry() -> None:
    assert step_for(event(AccessKind.GRANT), CTX, NOW, EN) == Invite(welcome=False)
    back = dataclasses.replace(CTX, from_status="expired")
    assert step_for(event(AccessKind.GRANT), back, NOW, EN) == Invite(welcome=True)


def test_grant__to_a_join_request_channel_sends_its_link_to_ask() -> None:
    asking = dataclasses.replace(CTX, admission="join_request")
    assert step_for(event(AccessKind.GRANT), asking, NOW, EN) == InviteToAsk()


def test_grant__inside_says_how_long_a_renewal_runs_and_nothing_for_an_owners_grant() -> None:
    inside = dataclasses.replace(CTX, inside=True)
    step = step_for(event(AccessKind.GRANT), inside, NOW, EN)
    assert step == Say(
        {"text": f"Payment received: your access to {SIGNALS} now runs to 2026-12-10 12:00 UTC."}
    )
    granted = dataclasses.replace(inside, cause="grant")
    assert step_for(event(AccessKind.GRANT), granted, NOW, EN) is None


@pytest.mark.parametrize(("hours", "left"), [(72, "3 days"), (24, "1 day"), (12, "12 hours")])
def test_expiry_notice__says_when_with_a_renew_button(hours: int, left: str) -> None:
    step = step_for(event(AccessKind.EXPIRY_NOTICE, notice_hours=hours), CTX, NOW, EN)
    assert isinstance(step, Say)
    assert step.message["text"] == (
        f"Your access to {SIGNALS} ends in {left}, on 2026-12-10 12:00 UTC. Renew to stay."
    )
    assert button(step) == RENEW_URL


def test_expiry_notice__dropped_once_the_membership_was_renewed_or_ended() -> None:
    notice = event(AccessKind.EXPIRY_NOTICE, notice_hours=72)
    renewed = dataclasses.replace(CTX, membership_expires_at=ENDS + dt.timedelta(days=30))
    assert step_for(notice, renewed, NOW, EN) is None
    assert step_for(notice, dataclasses.replace(CTX, membership_status="grace"), NOW, EN) is None


def test_expiry_notice__a_renewing_stars_subscription_offers_no_pay_link() -> None:
    stars = dataclasses.replace(CTX, star_renewal="active")
    step = step_for(event(AccessKind.EXPIRY_NOTICE, notice_hours=72), stars, NOW, EN)
    assert isinstance(step, Say) and "reply_markup" not in step.message
    assert "renews on 2026-12-10 12:00 UTC" in step.message["text"]


def test_reminder__counts_the_grace_days_left_and_says_a_cancelled_renewal() -> None:
    ended = dataclasses.replace(CTX, membership_expires_at=NOW - dt.timedelta(days=1))
    step = step_for(event(AccessKind.REMINDER), ended, NOW, EN)
    assert isinstance(step, Say)
    assert (
        step.message["text"]
        == f"Your subscription to {SIGNALS} has ended. Renew within 2 days to stay."
    )
    assert button(step) == RENEW_URL
    cancelled = dataclasses.replace(ended, star_renewal="canceled")
    step = step_for(event(AccessKind.REMINDER), cancelled, NOW, EN)
    assert isinstance(step, Say) and "You cancelled its renewal" in step.message["text"]


@pytest.mark.parametrize("kind", [AccessKind.CHECKOUT_DECLINED, AccessKind.CHECKOUT_LAPSED])
def test_checkout_ended__offers_to_try_again(kind: AccessKind) -> None:
    step = step_for(event(kind), CTX, NOW, EN)
    assert isinstance(step, Say) and SIGNALS in step.message["text"]
    assert step.message["reply_markup"]["inline_keyboard"][0][0]["text"] == "Try again"


def test_revoke__removes_with_a_renew_button_and_none_without_the_bots_name() -> None:
    step = step_for(event(AccessKind.REVOKE), CTX, NOW, EN)
    assert isinstance(step, Remove) and button(step) == RENEW_URL
    nameless = dataclasses.replace(CTX, bot_username=None)
    assert step_for(event(AccessKind.REVOKE), nameless, NOW, EN) == Remove({})
