"""`python -m simulators.demo_month`: a month of made-up business for `make run`'s demo, played
through the running system as its people would, then moved back over the last 30 days.

Visitors write to the demo bot in the simulated Telegram and go through the gate (or stop at
it), some arrive through a campaign's invite link and some leave that channel again, buyers pay
on the simulated checkout (its callbacks are signed as each gateway signs them), advertisers
book the ad slot, the owner approves or rejects in the panel's API and they pay on the simulated
TronGrid, some people block the bot, and the owner sends two broadcasts. Everything runs through
the services' own code; the only thing done by hand is the time: the system stamps what it does
when it does it, so once all of it is settled one transaction moves each person's rows back by
that person's offset in the plan (and each broadcast by its own), and the statistics' roll-up
counts again from the start.

The plan is drawn from a seed (`DEMO_SEED`): the same seed makes the same month.
`DEMO_MONTH` is how many visitors it has (150); 0 turns the month off. It is played only into
a system nobody has used yet.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import math
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any, Literal

import httpx
import psycopg

from billing.gateways import BY_NAME, GATEWAYS
from shared import sqlfile
from shared.tls import verified

log = logging.getLogger("demo_month")
Q = sqlfile.load("simulators", "demo_month.sql")

DAY = dt.timedelta(days=1)
# A line on stderr per part of the month done: `progress <done> <total>`.
PROGRESS = "progress"
CAMPAIGNS = ("Spring sponsor", "Podcast ad")
FIRST_NAMES = (
    "Ali", "Sara", "Reza", "Mina", "Omid", "Neda", "Amir", "Leila", "Dana", "Kian", "Maria",
    "Jonas", "Lena", "Paul", "Emma", "Noah", "Yara", "Ivan", "Olga", "Tom",
)  # fmt: skip
Walk = Literal["start", "gate_shown", "gate"]
Outcome = Literal["requested", "rejected", "part_paid", "paid_usdt", "paid_trx"]


@dataclass(frozen=True)
class Visitor:
    name: str
    ago: dt.timedelta
    walk: Walk
    campaign: int | None
    leaves: bool
    gateway: str | None
    declines: bool
    blocks: bool


@dataclass(frozen=True)
class Advertiser:
    name: str
    ago: dt.timedelta
    outcome: Outcome
    ad: str


@dataclass(frozen=True)
class Broadcast:
    text: str
    button: tuple[str, str] | None
    ago: dt.timedelta


@dataclass(frozen=True)
class Plan:
    visitors: tuple[Visitor, ...]
    advertisers: tuple[Advertiser, ...]
    broadcasts: tuple[Broadcast, ...]

    def people(self) -> list[str]:
        """Everyone's name, in the order they are made (and numbered) in Telegram."""
        return [v.name for v in self.visitors] + [a.name for a in self.advertisers]

    def offsets(self) -> list[dt.timedelta]:
        return [v.ago for v in self.visitors] + [a.ago for a in self.advertisers]


def plan(seed: int, visitors: int) -> Plan:
    """The month, drawn from `seed`: more visitors toward today, most of them through the gate,
    a fifth of them buying (a few long enough ago that their month and grace are over)."""
    rng = random.Random(seed)  # noqa: S311 - made-up people, drawn again from the same seed

    def within(low: dt.timedelta, high: dt.timedelta) -> dt.timedelta:
        return low + (high - low) * rng.random()

    people = []
    for n in range(visitors):
        buys = rng.random() < 0.2
        lapsed = buys and rng.random() < 0.15
        # Denser toward today: a business that grew over the month.
        ago = within(30.5 * DAY, 40 * DAY) if lapsed else 30 * DAY * (1 - math.sqrt(rng.random()))
        gateway = rng.choice(GATEWAYS).name if buys else None
        campaign = rng.randrange(len(CAMPAIGNS)) if rng.random() < 0.35 else None
        people.append(
            Visitor(
                name=f"{rng.choice(FIRST_NAMES)} {n + 1}",
                ago=max(ago, dt.timedelta(minutes=10)),
                walk=rng.choices(("start", "gate_shown", "gate"), weights=(2, 2, 6))[0],
                campaign=campaign,
                leaves=campaign is not None and rng.random() < 0.2,
                gateway=gateway,
                # Subgate sends nothing for a declined card: only the others decline here.
                declines=gateway in ("stripe", "wayforpay") and rng.random() < 0.2,
                blocks=rng.random() < 0.1,
            )
        )
    outcomes: tuple[tuple[Outcome, dt.timedelta, dt.timedelta], ...] = (
        ("paid_usdt", 16 * DAY, 24 * DAY),
        ("rejected", 9 * DAY, 12 * DAY),
        ("paid_trx", 4 * DAY, 7 * DAY),
        ("requested", 1 * DAY, 2 * DAY),
        # Its day to pay the rest is not over: approved a few hours ago.
        ("part_paid", dt.timedelta(hours=2), dt.timedelta(hours=6)),
    )
    advertisers = tuple(
        Advertiser(
            name=f"Shop {n + 1}",
            ago=within(low, high),
            outcome=outcome,
            ad=f"Shop {n + 1}: handmade soap, {rng.choice((10, 15, 20, 25))}% off this week",
        )
        for n, (outcome, low, high) in enumerate(outcomes)
    )
    broadcasts = (
        Broadcast(
            "<b>New this week:</b> three fresh posts in the channel.",
            ("Open the channel", "https://t.me/gatehouse_demo"),
            within(9 * DAY, 10 * DAY),
        ),
        Broadcast(
            "Spring sale: <i>half price</i> on the paid channel until Sunday.",
            None,
            within(2 * DAY, 3 * DAY),
        ),
    )
    return Plan(tuple(people), advertisers, broadcasts)


class StepFailed(Exception):
    """Something the month's script expected did not happen."""


class Player:
    """Plays a plan against the running system: the simulated Telegram and TronGrid, the
    panel's API (as the demo owner) and the database (to wait for the work to settle and
    to move it back)."""

    def __init__(self, env: dict[str, str], gate: dict[str, Any], client: httpx.AsyncClient):
        self.sim = env["TELEGRAM_API_BASE"].rstrip("/") + "/_sim"
        self.token = env["DEMO_BOT_TOKEN"]
        self.bot_api = env["TELEGRAM_API_BASE"].rstrip("/") + f"/bot{self.token}"
        self.chain = env["TRONGRID_URL"].rstrip("/") + "/_sim"
        self.panel = env["PANEL_URL"].rstrip("/") + "/v1"
        self.database_url = env["DATABASE_URL"]
        self.owner = (env.get("DEMO_OWNER_EMAIL", "owner@example.com"), env["DEMO_OWNER_PASSWORD"])
        self.gate = gate
        self.http = client
        self.bot = {"bot_username": env.get("DEMO_BOT_USERNAME", "gatehouse_demo_bot")}
        self.auth: dict[str, str] = {}
        self.links: list[str] = []
        self.failed: Counter[str] = Counter()
        self.done = 0
        self.total = 0

    async def call(self, method: str, url: str, **kwargs: Any) -> Any:
        response = await self.http.request(method, url, **kwargs)
        if response.status_code >= 400:
            shown = url.replace(self.token, "<token>")
            raise StepFailed(f"{method} {shown}: {response.status_code} {response.text[:200]}")
        json_body = response.headers.get("content-type", "").startswith("application/json")
        return response.json() if json_body else None

    async def say(self, user_id: int, text: str) -> None:
        await self.call(
            "POST", f"{self.sim}/messages", json={**self.bot, "user_id": user_id, "text": text}
        )

    async def press(self, user_id: int, button: str) -> Any:
        return await self.call(
            "POST",
            f"{self.sim}/press",
            json={**self.bot, "user_id": user_id, "button": button, "wait": 30},
        )

    async def heard(self, user_id: int, text: str) -> str:
        said = await self.call(
            "GET",
            f"{self.sim}/said",
            params={**self.bot, "user_id": user_id, "text": text, "wait": 30},
        )
        return str(said["said"])

    async def as_owner(self, method: str, path: str, **kwargs: Any) -> Any:
        return await self.call(method, self.panel + path, headers=self.auth, **kwargs)

    async def sign_in(self) -> None:
        email, password = self.owner
        signed = await self.call(
            "POST", f"{self.panel}/auth/login", json={"email": email, "password": password}
        )
        self.auth = {"authorization": f"Bearer {signed['access_token']}"}

    async def listening(self) -> bool:
        """Whether the demo bot has polled for `chat_member` updates yet: Telegram sends none
        before it asks for them, and the month's joins must reach it."""
        info = await self.call("GET", f"{self.bot_api}/getWebhookInfo")
        return "chat_member" in info["result"].get("allowed_updates", [])

    async def make_people(self, names: list[str]) -> list[int]:
        """One after another, so the same plan numbers the same people the same way."""
        ids = []
        for name in names:
            made = await self.call("POST", f"{self.sim}/people", json={"first_name": name})
            ids.append(int(made["id"]))
        return ids

    async def campaigns(self) -> None:
        listed = await self.as_owner("GET", "/campaigns")
        known = {c["name"]: c["invite_link"] for c in listed["items"]}
        for name in CAMPAIGNS:
            if name not in known:
                made = await self.as_owner(
                    "POST",
                    "/campaigns",
                    json={
                        "name": name,
                        "bot_id": self.gate["bot_id"],
                        "channel_id": self.gate["club_channel_id"],
                    },
                )
                known[name] = made["invite_link"]
            self.links.append(str(known[name]))

    async def visit(self, user_id: int, visitor: Visitor) -> None:
        if visitor.campaign is not None:
            await self.call(
                "POST",
                f"{self.sim}/join",
                json={"user_id": user_id, "invite_link": self.links[visitor.campaign]},
            )
        if visitor.walk == "start":
            await self.say(user_id, "/start")
            await self.heard(user_id, "")
        else:
            await self.say(user_id, "/start welcome")
            await self.press(user_id, "Demo news")
            if visitor.walk == "gate":
                await self.press(user_id, "Demo talk")
                await self.press(user_id, "I've joined")
                await self.heard(user_id, "behind the gate")
        if visitor.gateway is not None:
            await self.buy(user_id, visitor)
        if visitor.leaves:
            await self.call(
                "POST",
                f"{self.sim}/leave",
                json={"user_id": user_id, "chat_id": self.gate["club"]},
            )
        if visitor.blocks:
            await self.call("POST", f"{self.sim}/block", json={**self.bot, "user_id": user_id})

    async def buy(self, user_id: int, visitor: Visitor) -> None:
        title = BY_NAME[str(visitor.gateway)].title
        await self.say(user_id, "/start")
        await self.press(user_id, "Demo paid channel")
        await self.press(user_id, "Monthly")
        await self.press(user_id, f"Pay with {title}")
        checkout = await self.press(user_id, "Pay 5.00 USD")
        action = "decline" if visitor.declines else "pay"
        await self.call("POST", checkout["url"], data={"action": action})
        if visitor.declines:
            await self.heard(user_id, "did not go through")
            return
        await self.heard(user_id, "is open")
        await self.press(user_id, "Join Demo paid channel")

    async def advertise(self, user_id: int, advertiser: Advertiser) -> None:
        await self.say(user_id, "/ads")
        await self.press(user_id, "Pinned post")
        await self.say(user_id, advertiser.ad)
        await self.press(user_id, "Send for review")
        await self.heard(user_id, "is with the owner for review")
        if advertiser.outcome == "requested":
            return
        listed = await self.as_owner("GET", "/ad-orders", params={"status": "requested"})
        order = next(o for o in listed["items"] if o["telegram_user_id"] == user_id)
        if advertiser.outcome == "rejected":
            await self.as_owner("POST", f"/ad-orders/{order['id']}/reject")
            return
        approved = await self.as_owner("POST", f"/ad-orders/{order['id']}/approve")
        await self.heard(user_id, "is approved")
        price = int(approved["price_micros"])
        if advertiser.outcome == "paid_trx":
            # The price in TRX at the order's rate (USDT per TRX), in sun, rounded up.
            sun = Decimal(price) / Decimal(approved["trx_rate"])
            payment = {"kind": "trx", "amount": int(sun.to_integral_value(ROUND_CEILING))}
        else:
            part = advertiser.outcome == "part_paid"
            payment = {"kind": "usdt", "amount": 4_000_000 if part else price}
        sent = await self.call(
            "POST", f"{self.chain}/transactions", json={**payment, "to": approved["pay_to"]}
        )
        await self.say(user_id, str(sent["tx_hash"]))
        await self.heard(
            user_id, "left to pay" if advertiser.outcome == "part_paid" else "is paid in full"
        )

    async def broadcast(self, broadcast: Broadcast) -> int:
        body: dict[str, Any] = {"bot_id": self.gate["bot_id"], "text": broadcast.text}
        if broadcast.button:
            body["button_text"], body["button_url"] = broadcast.button
        made = await self.as_owner("POST", "/broadcasts", json=body)
        await self.until(
            lambda: self._broadcast_over(int(made["id"])), f"broadcast {made['id']} to end", 120
        )
        return int(made["id"])

    async def _broadcast_over(self, broadcast_id: int) -> bool:
        shown = await self.as_owner("GET", f"/broadcasts/{broadcast_id}")
        return shown["state"] in ("done", "cancelled")

    async def until(
        self, condition: Callable[[], Awaitable[bool]], what: str, timeout: float
    ) -> None:
        deadline = time.monotonic() + timeout
        while not await condition():
            if time.monotonic() > deadline:
                raise StepFailed(f"waited {timeout:.0f} s for {what}")
            await asyncio.sleep(0.2)

    async def attempt(self, what: str, step: Awaitable[None]) -> None:
        """One person's part: a step that does not happen is logged and counted, and the rest
        of the month goes on."""
        try:
            await step
        except (StepFailed, httpx.HTTPError, StopIteration, KeyError) as error:
            self.failed[what] += 1
            log.warning("demo month: %s did not finish: %s", what, error)
        self.progress()

    def progress(self) -> None:
        """One more of the month's parts done, told to whoever runs this (the launcher draws
        a bar from these lines)."""
        self.done += 1
        print(f"{PROGRESS} {self.done} {self.total}", file=sys.stderr, flush=True)

    async def settle(self) -> None:
        """Until the services have done all the month's people asked of them."""
        async with await psycopg.AsyncConnection.connect(
            self.database_url, autocommit=True
        ) as conn:

            async def settled() -> bool:
                row = await (await conn.execute(Q["month_busy"])).fetchone()
                return row is not None and row[0] == 0

            await self.until(settled, "the system to finish the month's work", 60)

    async def play(self, month: Plan) -> dict[str, Any]:
        started = time.monotonic()
        self.total = len(month.visitors) + len(month.advertisers) + len(month.broadcasts)
        await self.until(self.listening, "the demo bot's first poll", 30)
        await self.sign_in()
        await self.campaigns()
        ids = await self.make_people(month.people())
        visitor_ids = ids[: len(month.visitors)]
        advertiser_ids = ids[len(month.visitors) :]
        # Many people at once, as a bot meets them; the bot's send limit sets the pace.
        room = asyncio.Semaphore(48)

        async def one(user_id: int, visitor: Visitor) -> None:
            async with room:
                await self.attempt("a visit", self.visit(user_id, visitor))

        async def shop(user_id: int, advertiser: Advertiser) -> None:
            await self.attempt("an ad order", self.advertise(user_id, advertiser))

        async def visits_then_broadcasts() -> None:
            await asyncio.gather(
                *(one(u, v) for u, v in zip(visitor_ids, month.visitors, strict=True))
            )
            # After the visits: a broadcast reaches the people the bot has met. One after
            # the other, oldest first, so their numbers follow their days (the bot's send limit
            # sets the pace either way).
            for broadcast in month.broadcasts:
                try:
                    broadcasts.append((await self.broadcast(broadcast), broadcast))
                except (StepFailed, httpx.HTTPError) as error:
                    self.failed["a broadcast"] += 1
                    log.warning("demo month: a broadcast did not finish: %s", error)
                self.progress()

        broadcasts: list[tuple[int, Broadcast]] = []
        await asyncio.gather(
            visits_then_broadcasts(),
            *(shop(u, a) for u, a in zip(advertiser_ids, month.advertisers, strict=True)),
        )
        await self.settle()
        self.move_back(ids, month, broadcasts)
        return {
            "visitors": len(month.visitors),
            "advertisers": len(month.advertisers),
            "broadcasts": len(broadcasts),
            "seconds": round(time.monotonic() - started, 1),
            "failed": dict(self.failed),
        }

    def move_back(
        self, ids: list[int], month: Plan, broadcasts: list[tuple[int, Broadcast]]
    ) -> None:
        with psycopg.connect(self.database_url) as conn, conn.transaction():
            conn.execute(Q["month_shift_table"])
            with conn.cursor().copy(Q["month_shift_copy"]) as copy:
                for user_id, back in zip(ids, month.offsets(), strict=True):
                    copy.write_row((user_id, back))
            conn.execute(Q["month_move_people"], prepare=False)
            for broadcast_id, broadcast in broadcasts:
                conn.execute(Q["month_move_broadcast"], {"id": broadcast_id, "back": broadcast.ago})


def fresh(database_url: str) -> bool:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(Q["month_fresh"]).fetchone()
    return bool(row and row[0])


async def run(env: dict[str, str], gate: dict[str, Any], month: Plan) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
    async with httpx.AsyncClient(timeout=60, limits=limits, verify=verified()) as client:
        return await Player(env, gate, client).play(month)


def main() -> int:
    """Plays the month once; prints what it did as one JSON line."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    # Its request lines would carry the bot's token in the Bot API's paths.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    env = dict(os.environ)
    visitors = int(env.get("DEMO_MONTH") or 150)
    if visitors <= 0:
        print(json.dumps({"skipped": "DEMO_MONTH is 0"}))
        return 0
    if not fresh(env["DATABASE_URL"]):
        print(json.dumps({"skipped": "the system has been used"}))
        return 0
    gate = json.loads(sys.argv[1])
    month = plan(int(env.get("DEMO_SEED") or 1), visitors)
    print(json.dumps(asyncio.run(run(env, gate, month))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
