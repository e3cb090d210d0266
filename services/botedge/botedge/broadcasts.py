"""Broadcasts: one message to every person of a bot, fanned out into the outbox.

panel-api writes a queued broadcast. A worker claims it (SKIP LOCKED, a fencing token and a
lease, like the inbox), makes the message once, and queues it for the bot's people in batches
in person id order, each under `broadcast:<id>:<person>` at the priority below replies. The
claim's `fanned_to` moves in the batch's own statement, so a fan-out cut by a crash resumes
after the last committed batch and queues nobody twice. The fan-out stays at most WINDOW sends
ahead of the bot's sender, so the sender's view never fills with broadcast rows and a reply
is never read behind them; the bot's 25 messages a second stay the limit. Once nothing of it
is pending the broadcast is done, its counts kept.

Cancelling marks the broadcast and its pending sends in one transaction and tells the bot's
sender to drop what it holds; a send already in flight may still arrive.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from psycopg.types.json import Jsonb

from botedge import errors, sqlq
from botedge.bot_store import bot_token
from botedge.content import Content, content_reply
from botedge.db import connection
from botedge.ids import BotId, ChatId
from botedge.inbox_store import claim_lost
from botedge.registration import upstream_error
from botedge.telegram import BadRequest, BotApi, Forbidden, TelegramError, unreachable
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Connection, Pool
from shared.lifecycle import sleep_unless_stopped, wait_any
from shared.listen import Notifier
from shared.secretbox import SecretBox
from shared.tasks import retrieve

log = logging.getLogger("botedge.broadcasts")
Q = sqlq.Q

# People per fan-out statement.
BATCH = 500
# How many of a bot's broadcast sends may wait in the outbox before the fan-out waits: 80 s
# of sending at 25 a second.
WINDOW = 2_000
# Broadcasts one worker fans out at once.
AT_ONCE = 4
# The LISTEN channel a cancel is announced on, `<bot id>:<broadcast id>`.
CANCELLED = "broadcast_cancelled"
# The LISTEN channel a new broadcast is announced on.
QUEUED = "broadcasts"


# What Telegram answers when a person cannot be written to at all (not a block).
@dataclass(frozen=True)
class Draft:
    """What a broadcast says: Telegram HTML, or a content of the bot; an optional URL button."""

    text: str | None = None
    content_id: int | None = None
    button_text: str | None = None
    button_url: str | None = None


async def make_message(conn: Connection, bot_id: BotId, draft: Draft) -> tuple[str, dict[str, Any]]:
    """The call a broadcast makes, without its chat; `InvalidValues` at `content_id` when the
    bot has no such content."""
    payload: dict[str, Any]
    if draft.text is not None:
        method, payload = "sendMessage", {"text": draft.text, "parse_mode": "HTML"}
    else:
        cur = await conn.execute(
            Q["broadcast_content"], {"content_id": draft.content_id, "bot_id": bot_id}
        )
        row = await cur.fetchone()
        if row is None:
            raise errors.InvalidValues(
                "the bot has no content by that id", field="content_id", code="not-found"
            )
        reply = content_reply(ChatId(0), Content.from_row(row))
        method, payload = reply.method, {k: v for k, v in reply.payload.items() if k != "chat_id"}
    if draft.button_text and draft.button_url:
        payload["reply_markup"] = {
            "inline_keyboard": [[{"text": draft.button_text, "url": draft.button_url}]]
        }
    return method, payload


async def send_test(
    pool: Pool, api: BotApi, box: SecretBox, bot_id: BotId, chat_id: int, draft: Draft
) -> dict[str, Any]:
    """The broadcast's message to one person now, before it goes to everyone."""
    async with connection(pool) as conn:
        _, token = await bot_token(conn, box, bot_id)
        method, payload = await make_message(conn, bot_id, draft)
    try:
        result = await api.call(token, method, {**payload, "chat_id": chat_id})
    except Forbidden as error:
        raise errors.InvalidValues(
            f"Telegram will not deliver to this person: {error.description}",
            field="to",
            code="unreachable",
        ) from None
    except BadRequest as error:
        if unreachable(error.description):
            raise errors.InvalidValues(
                f"Telegram will not deliver to this person: {error.description}",
                field="to",
                code="unreachable",
            ) from None
        field = "text" if draft.text is not None else "content_id"
        if "button" in error.description.lower() or "url" in error.description.lower():
            field = "button_url"
        raise errors.InvalidValues(
            f"Telegram refused the message: {error.description}", field=field, code="invalid"
        ) from None
    except TelegramError as error:
        raise upstream_error(method, error) from None
    message_id = result.get("message_id") if isinstance(result, dict) else None
    return {"sent": True, "message_id": message_id}


async def cancel(
    pool: Pool, notifier: Notifier, broadcast_id: int, now: dt.datetime
) -> dict[str, Any]:
    """Stop a broadcast: it and its unsent rows cancelled in one transaction; the bot's sender
    told to drop what it holds of it."""
    async with connection(pool) as conn, conn.transaction():
        cur = await conn.execute(Q["stop_broadcast"], {"id": broadcast_id, "now": now})
        stopped = await cur.fetchone()
        if stopped is None:
            cur = await conn.execute(Q["broadcast_state"], {"id": broadcast_id})
            found = await cur.fetchone()
            if found is None:
                raise errors.NotFound("no broadcast by that id")
            raise errors.Conflict(f"the broadcast is already {found['state']}")
        await conn.execute(Q["drop_broadcast_sends"], {"id": broadcast_id})
        cur = await conn.execute(Q["count_broadcast_sends"], {"id": broadcast_id})
        counts = dict(await cur.fetchone() or {})
    notifier.announce(CANCELLED, f"{stopped['bot_id']}:{broadcast_id}")
    return counts


@dataclass(frozen=True)
class Claim:
    id: int
    bot_id: BotId
    token: uuid.UUID
    made: bool
    draft: Draft


class FanOut:
    """Claims open broadcasts and carries each to its end, AT_ONCE at a time per worker."""

    def __init__(
        self,
        pool: Pool,
        notifier: Notifier,
        holder: str,
        *,
        lease_seconds: float = 30.0,
        poll_interval: float = 1.0,
        wakeup: asyncio.Event | None = None,
        batch: int = BATCH,
        window: int = WINDOW,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.pool = pool
        self.clock = clock
        self.notifier = notifier
        self.holder = holder
        self.lease_seconds = lease_seconds
        self.poll_interval = poll_interval
        self.wakeup = wakeup or asyncio.Event()
        self.batch = batch
        self.window = window
        self.held: dict[int, asyncio.Task[None]] = {}

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            claimed = None
            if len(self.held) < AT_ONCE:
                try:
                    claimed = await self._claim()
                except errors.BotedgeError as error:
                    log.warning("could not claim a broadcast: %s", error)
            if claimed is not None:
                task = asyncio.get_running_loop().create_task(self._carry(claimed, stopping))
                self.held[claimed.id] = task
                task.add_done_callback(self._forget(claimed.id))
                task.add_done_callback(retrieve(log, f"broadcast {claimed.id}"))
                continue
            self.wakeup.clear()
            await wait_any(self.poll_interval, stopping, self.wakeup)
        if self.held:
            await asyncio.gather(*self.held.values(), return_exceptions=True)

    def _forget(self, broadcast_id: int) -> Callable[[asyncio.Task[None]], None]:
        def forget(_: asyncio.Task[None]) -> None:
            self.held.pop(broadcast_id, None)

        return forget

    async def _claim(self) -> Claim | None:
        async with connection(self.pool) as conn:
            cur = await conn.execute(
                Q["claim_broadcast"],
                {
                    "holder": self.holder,
                    "lease": self.lease_seconds,
                    "held": list(self.held),
                    "now": self.clock.now(),
                },
            )
            row = await cur.fetchone()
        if row is None:
            return None
        log.info("broadcast %d (bot %d): claimed, %s", row["id"], row["bot_id"], row["state"])
        return Claim(
            int(row["id"]),
            BotId(int(row["bot_id"])),
            row["lock_token"],
            bool(row["made"]),
            Draft(row["text"], row["content_id"], row["button_text"], row["button_url"]),
        )

    async def _carry(self, claim: Claim, stopping: asyncio.Event) -> None:
        """Make the message, fan out, wait until it is all sent; stop quietly when the claim
        is lost or the broadcast cancelled (another worker or the owner has it)."""
        params = {"id": claim.id, "token": claim.token, "lease": self.lease_seconds}
        try:
            if not claim.made and not await self._make(claim, params):
                return
            while not stopping.is_set():
                state = await self._step(claim, params)
                if state is None:
                    return
                if state == "wait":
                    await sleep_unless_stopped(stopping, self.poll_interval)
        except errors.BotedgeError as error:
            if claim_lost(error):
                log.info("broadcast %d: claim lost or cancelled; stopping", claim.id)
                return
            # The claim runs out and this or another worker takes it up again.
            log.warning("broadcast %d: %s", claim.id, error)

    async def _make(self, claim: Claim, params: dict[str, Any]) -> bool:
        async with connection(self.pool) as conn, conn.transaction():
            try:
                method, payload = await make_message(conn, claim.bot_id, claim.draft)
            except errors.InvalidValues:
                await conn.execute(Q["broadcast_content_gone"], {**params, "now": self.clock.now()})
                log.warning("broadcast %d: its content is gone; cancelled", claim.id)
                return False
            cur = await conn.execute(
                Q["make_broadcast_message"], {**params, "method": method, "payload": Jsonb(payload)}
            )
            return await cur.fetchone() is not None

    async def _step(self, claim: Claim, params: dict[str, Any]) -> str | None:
        """One batch, a wait, or a check for the end. None: nothing more to do here."""
        async with connection(self.pool) as conn:
            cur = await conn.execute(Q["hold_broadcast"], params)
            held = await cur.fetchone()
            if held is None:
                return None
            if held["state"] == "sending":
                cur = await conn.execute(Q["close_broadcast"], {**params, "now": self.clock.now()})
                if await cur.fetchone() is not None:
                    log.info("broadcast %d: done", claim.id)
                    return None
                return "wait"
            cur = await conn.execute(
                Q["broadcast_backlog"], {"bot_id": claim.bot_id, "window": self.window}
            )
            waiting = int((await cur.fetchone() or {"waiting": 0})["waiting"])
            if waiting and waiting + self.batch > self.window:
                return "wait"
            cur = await conn.execute(Q["fan_out_broadcast"], {**params, "limit": self.batch})
            fanned = await cur.fetchone()
        if fanned is not None and int(fanned["queued"]):
            self.notifier.announce("outbox", str(claim.bot_id))
        return "more"


def drop_on_cancel(drop: Callable[[BotId, int], None]) -> Callable[[str], None]:
    """A listener callback: `<bot>:<broadcast>` -> drop(bot, broadcast)."""

    def on_payload(payload: str) -> None:
        bot, _, broadcast = payload.partition(":")
        if bot.isdigit() and broadcast.isdigit():
            drop(BotId(int(bot)), int(broadcast))

    return on_payload
