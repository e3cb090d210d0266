"""A token bucket: `capacity` at once, `rate` more each second."""

from __future__ import annotations

import time


class Bucket:
    def __init__(self, capacity: float, rate: float) -> None:
        self.capacity = capacity
        self.rate = rate
        self.tokens = capacity
        self.at = time.monotonic()

    def wait_time(self) -> float:
        """0 when a token is there to take, else the seconds until one is."""
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate

    def take(self) -> None:
        self.tokens -= 1
