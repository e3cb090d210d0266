"""A token bucket: `capacity` at once, `rate` more each second."""

from __future__ import annotations

from shared.clock import SYSTEM_CLOCK, Clock


class Bucket:
    def __init__(self, capacity: float, rate: float, clock: Clock = SYSTEM_CLOCK) -> None:
        self.capacity = capacity
        self.rate = rate
        self.clock = clock
        self.tokens = capacity
        self.at = clock.monotonic()

    def wait_time(self) -> float:
        """0 when a token is there to take, else the seconds until one is."""
        now = self.clock.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now
        # Within rounding of a whole token counts as one: waiting out 1e-14 s more can leave
        # the clock where it was, for ever.
        return 0.0 if self.tokens >= 1 - 1e-9 else (1 - self.tokens) / self.rate

    def take(self) -> None:
        self.tokens -= 1
