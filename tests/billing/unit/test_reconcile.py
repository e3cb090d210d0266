"""Which payers outside their channel are a difference, and who is invited again."""

from __future__ import annotations

import datetime as dt

from billing.reconcile import Payer, has_left, invite_again

NOW = dt.datetime(2026, 12, 7, 12, tzinfo=dt.UTC)
DAY = dt.timedelta(hours=24)


def payer(
    began: dt.timedelta | None = None,
    inside: dt.timedelta | None = None,
    invited: dt.timedelta | None = None,
    by_reconcile: bool = False,
) -> Payer:
    """A payer with each time given as how long before NOW."""

    def at(ago: dt.timedelta | None) -> dt.datetime | None:
        return None if ago is None else NOW - ago

    return Payer(7, at(began), at(inside), at(invited), by_reconcile)


def test_has_left__never_seen_inside_is_not_joined_yet() -> None:
    assert not has_left(payer(began=DAY, invited=DAY))


def test_has_left__seen_inside_since_access_began_is_gone() -> None:
    assert has_left(payer(began=2 * DAY, inside=DAY, invited=2 * DAY))


def test_has_left__seen_inside_only_in_an_earlier_access_is_not_joined_yet() -> None:
    assert not has_left(payer(began=DAY, inside=30 * DAY, invited=DAY))


def test_invite_again__not_joined_once_the_invite_is_old_enough_and_only_once() -> None:
    assert not invite_again(payer(began=DAY / 2, invited=DAY / 2), NOW, DAY)
    assert invite_again(payer(began=2 * DAY, invited=DAY), NOW, DAY)
    # The one re-send was reconciliation's: no more, however old it grows.
    assert not invite_again(payer(began=9 * DAY, invited=8 * DAY, by_reconcile=True), NOW, DAY)


def test_invite_again__a_leaver_at_once_then_not_until_they_leave_again() -> None:
    assert invite_again(payer(began=9 * DAY, inside=DAY, invited=9 * DAY), NOW, DAY)
    sent = payer(began=9 * DAY, inside=DAY, invited=DAY / 2, by_reconcile=True)
    assert not invite_again(sent, NOW, DAY)
    # Back inside after that invite, and gone again: one more.
    again = payer(began=9 * DAY, inside=DAY / 4, invited=DAY / 2, by_reconcile=True)
    assert invite_again(again, NOW, DAY)
