"""The one backoff rule every retry loop uses."""

from __future__ import annotations

import random

from shared.backoff import backoff_delay


def test_backoff__doubles_from_the_base_up_to_the_cap() -> None:
    delays = [backoff_delay(attempt, base=0.5, cap=10.0) for attempt in range(1, 8)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_backoff__jitter_stays_in_the_upper_half() -> None:
    rng = random.Random(7)
    for attempt in range(1, 12):
        delay = backoff_delay(attempt, base=1.0, cap=60.0, jitter=True, rng=rng)
        ceiling = min(60.0, 2.0 ** (attempt - 1))
        assert ceiling / 2 <= delay <= ceiling


def test_backoff__attempt_zero_or_less_is_the_base() -> None:
    assert backoff_delay(0, base=5.0, cap=300.0) == 5.0
