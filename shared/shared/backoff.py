"""One backoff rule for every retry loop: exponential from `base`, capped, optionally jittered."""

from __future__ import annotations

import random


def backoff_delay(
    attempt: int, *, base: float, cap: float, jitter: bool = False, rng: random.Random | None = None
) -> float:
    """Seconds to wait before try `attempt + 1`: base * 2^(attempt-1), at most `cap`.

    With `jitter`, somewhere in the upper half of that, so that many clients failing together do
    not retry together.
    """
    ceiling = min(cap, base * 2.0 ** max(0, attempt - 1))
    if not jitter:
        return ceiling
    return (rng or random).uniform(ceiling / 2, ceiling)
