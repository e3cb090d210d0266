"""Named leases in one table: one holder at a time, taken over once expired, or at once when
its holder's presence has run out.

A worker's presence (`worker:<holder>`) is a short lease of its own, renewed every third of
`PRESENCE_SECONDS`; its send and poll leases are long (`LEASE_SECONDS`, one renewal a bot
every ten seconds) and bound to it. Another worker may take a bound lease as soon as the
holder's presence has run out by the database's clock, the one every host shares; the holder
stops trusting the lease as soon as it stops trusting its presence, a sixth of
`PRESENCE_SECONDS` before the database would let it go, so two holders never overlap while a
killed worker's bots move in seconds."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass

from botedge import bot_store
from botedge.db import connection
from botedge.metrics import LEASE_CHANGES
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Pool


def holder_id() -> str:
    """Who we are, unique per process run."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class Lease:
    """Renew every `ttl / 3` and stop trusting it `ttl / 6` before it would run out: both follow
    from the length, so no length can leave a holder that never believes it holds."""

    pool: Pool
    name: str
    holder: str
    ttl: float = 30.0
    clock: Clock = SYSTEM_CLOCK
    valid_until: float = 0.0
    # The presence this lease lives by: held only while it is, asked for only while it is.
    bound: Lease | None = None

    @property
    def margin(self) -> float:
        return self.ttl / 6

    @property
    def renew_every(self) -> float:
        return self.ttl / 3

    @property
    def held(self) -> bool:
        now = self.clock.monotonic()
        return now < self.valid_until and (self.bound is None or self.bound.held)

    async def take_or_renew(self) -> bool:
        """True while we hold the lease; False (and stop at once) when we do not."""
        if self.bound is not None and not self.bound.held:
            # Without a presence others see, a lease taken now is free for them to take.
            self.lose()
            return False
        asked = self.clock.monotonic()
        # A failure to ask changes nothing: what we held is still ours until `valid_until`.
        async with connection(self.pool, timeout=5) as conn:
            taken = await bot_store.take_lease(conn, self.name, self.holder, self.ttl)
        if taken is None:
            self.lose()
            return False
        if taken:
            LEASE_CHANGES.labels(self.kind, "taken").inc()
        # Counted from before we asked: the database's expiry is at least this late.
        self.valid_until = asked + self.ttl - self.margin
        return True

    def lose(self) -> None:
        if self.valid_until:
            LEASE_CHANGES.labels(self.kind, "lost").inc()
        self.valid_until = 0.0

    async def release(self) -> None:
        self.valid_until = 0.0
        async with connection(self.pool, timeout=5) as conn:
            await bot_store.release_lease(conn, self.name, self.holder)

    @property
    def kind(self) -> str:
        return self.name.split(":", 1)[0]
