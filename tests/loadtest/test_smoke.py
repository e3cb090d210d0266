"""`make loadtest` in small: five seconds of the real update path at a low rate, set up through
panel-api, every update answered exactly once."""

from __future__ import annotations

import pytest

from loadtest import updates
from loadtest.scenarios import LOAD_USERS
from loadtest.stack import stack


@pytest.mark.slow(25)
def test_five_seconds_at_a_low_rate__every_update_answered_exactly_once(database_url: str) -> None:
    with stack(workers=2, telegram_ms=5, database_url=database_url) as running:
        bots = updates.set_up(running, 3)
        offers = updates.offer(running.get("telegram").url, bots, [(15.0, 5.0)], LOAD_USERS)
        updates.wait_answered(running, {o.user for o in offers}, 60)
        found = updates.collect(running, offers)
        busiest, _ = updates.sends_seen(running)
    summary = updates.summarize(found)
    assert summary.offered == 75
    assert (summary.answered_once, summary.unanswered, summary.answered_twice) == (75, 0, 0)
    # Each answer is the gate message, after the update reached the inbox and was handled.
    assert all(u.received and u.done and u.offer.at <= u.received <= u.done for u in found)
    assert all(u.done is not None and min(u.answers) >= u.done for u in found)
    assert 0 < max(busiest.values()) <= 25
