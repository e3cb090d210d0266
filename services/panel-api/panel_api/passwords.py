"""Passwords: bcrypt at the one cost `BCRYPT_ROUNDS` sets, hashed and checked off the loop."""

from __future__ import annotations

from functools import cached_property

import bcrypt
from starlette.concurrency import run_in_threadpool

from panel_api import errors

DEFAULT_ROUNDS = 12
# The least a deployment may set: cost 10 is about 60 ms a check here, cost 12 about 250 ms.
# Only the test settings go lower.
MIN_ROUNDS = 10
MAX_ROUNDS = 31
# The shortest password a member may set.
MIN_PASSWORD = 10
# bcrypt reads at most this many bytes of a password (bcrypt 5 refuses longer ones).
MAX_BYTES = 72


def refuse_if_too_long(password: str, field: str) -> None:
    """A new password bcrypt would cut short is refused at its field, not silently cut."""
    if len(password.encode()) > MAX_BYTES:
        raise errors.InvalidValue(
            f"password is over {MAX_BYTES} bytes", field=field, code="too-long"
        )


class Passwords:
    """Hashes new passwords at `rounds`; checks any stored hash at the cost it was made with."""

    def __init__(self, rounds: int = DEFAULT_ROUNDS) -> None:
        if not 4 <= rounds <= MAX_ROUNDS:
            raise ValueError(f"bcrypt rounds must be 4 to {MAX_ROUNDS}, not {rounds}")
        self.rounds = rounds

    def hash(self, password: str) -> str:
        return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=self.rounds)).decode()

    async def hash_off_loop(self, password: str) -> str:
        return await run_in_threadpool(self.hash, password)

    @cached_property
    def dummy(self) -> bytes:
        """Checked against when there is no stored hash, so every sign-in costs one check."""
        return bcrypt.hashpw(b"no such member", bcrypt.gensalt(rounds=self.rounds))

    async def check(self, presented: str, stored: str | None) -> bool:
        """One bcrypt check whatever is stored (~0.25 s at cost 12, by design), off the event
        loop; false when nothing is stored or the password is longer than bcrypt reads."""
        candidate = presented.encode()
        usable = stored is not None and len(candidate) <= MAX_BYTES
        against = stored.encode() if stored is not None and usable else self.dummy
        if not usable:
            candidate = b"-"
        matched = await run_in_threadpool(bcrypt.checkpw, candidate, against)
        return matched and usable
