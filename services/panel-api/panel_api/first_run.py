"""First start: while no owner exists, a one-time setup code lets whoever reads the service's
output create the owner with `POST /v1/setup`.

The code is printed (not logged: it is a credential), stored only as its SHA-256 hash, valid for
an hour by the service's clock, and replaced by the next process that starts without an owner.
Once an owner exists the route answers 404.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import hmac
import logging
import secrets
import sys
from collections.abc import Callable
from typing import Annotated

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import errors, store
from panel_api.access import Me, Role, answer
from panel_api.auth import FAILURE_WINDOW, Email, refuse_if_throttled
from panel_api.passwords import MIN_PASSWORD, Passwords, refuse_if_too_long
from shared.backoff import backoff_delay
from shared.clock import Clock
from shared.db import Pool
from shared.errors import json_body
from shared.settings import Networks
from shared.web import client_address, runtime

log = logging.getLogger("panel_api.first_run")

CODE_TTL = dt.timedelta(hours=1)
# Wrong codes are throttled per address and, since there is one code, under this one key.
THROTTLE_KEY = "setup-code"
SETUP_LIMITS = store.Limits(address=10, pair=10, account=10, device=10)
_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


class SetupBody(msgspec.Struct, forbid_unknown_fields=True):
    code: Annotated[str, msgspec.Meta(max_length=64)]
    email: Email
    password: Annotated[str, msgspec.Meta(min_length=MIN_PASSWORD, max_length=1024)]


def new_code() -> str:
    """Easy to read aloud and type: three groups of four, no 0/O or 1/I."""
    chars = "".join(secrets.choice(_ALPHABET) for _ in range(12))
    return f"{chars[:4]}-{chars[4:8]}-{chars[8:]}"


def code_hash(code: str) -> bytes:
    return hashlib.sha256(code.strip().upper().encode()).digest()


def print_code(code: str) -> None:
    # One line, the code last: a grep finds it whole and a double-click copies it.
    print(
        "No owner yet: create one within the hour on the panel's page (or POST /v1/setup with"
        f" the code, an email and a password); the setup code is {code}",
        file=sys.stderr,
        flush=True,
    )


async def offer_code(
    pool: Pool, clock: Clock, announce: Callable[[str], None], stopping: asyncio.Event
) -> None:
    """If no owner exists, store a fresh code's hash and announce the code; retried with backoff
    until the database answers once."""
    failures = 0
    while not stopping.is_set():
        code = new_code()
        try:
            async with store.connection(pool) as conn, conn.transaction():
                if await store.owner_exists(conn):
                    return
                await store.save_setup_code(conn, code_hash(code), clock.now() + CODE_TTL)
        except errors.DatabaseUnavailable as error:
            failures += 1
            delay = backoff_delay(failures, base=1.0, cap=30.0)
            log.warning("could not check for an owner (%s); again in %.0f s", error, delay)
            try:
                await asyncio.wait_for(stopping.wait(), delay)
            except TimeoutError:
                pass
            continue
        announce(code)
        return


class Setup:
    def __init__(self, clock: Clock, trusted_proxies: Networks, passwords: Passwords) -> None:
        self.clock = clock
        self.trusted_proxies = trusted_proxies
        self.passwords = passwords

    async def create_owner(self, request: Request) -> Response:
        body = await json_body(request, SetupBody, limit=4096)
        refuse_if_too_long(body.password, "password")
        address = client_address(request, self.trusted_proxies)
        now = self.clock.now()
        pool = runtime(request).pool
        attempt = store.Attempt(THROTTLE_KEY, address)
        async with store.connection(pool) as conn:
            if await store.owner_exists(conn):
                raise errors.NotFound("the owner exists; setup is over")
            await refuse_if_throttled(conn, attempt, now, "wrong setup codes", SETUP_LIMITS)
            saved = await store.setup_code(conn)
        matches = saved is not None and hmac.compare_digest(saved.code_hash, code_hash(body.code))
        if not matches or saved is None:
            async with store.connection(pool) as conn:
                await store.record_failure(conn, attempt, now, FAILURE_WINDOW)
            raise errors.BadSetupCode("the setup code is wrong")
        if saved.expires_at <= now:
            raise errors.SetupCodeExpired("the setup code has expired; restart to get another")
        password_hash = await self.passwords.hash_off_loop(body.password)
        async with store.connection(pool) as conn, conn.transaction():
            member = await store.create_owner(
                conn, body.email.strip().lower(), password_hash, code_hash(body.code)
            )
        if member is None:
            # Another request used the code first.
            raise errors.NotFound("the owner exists; setup is over")
        log.info("owner %d created with the setup code", member.id)
        return answer(Me(member.id, member.email, Role(member.role)), status=201)
