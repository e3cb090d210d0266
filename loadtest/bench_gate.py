"""/start to the gate message: how long a visitor waits, Telegram 40 ms away.

    make bench-gate            # or: python loadtest/bench_gate.py --visitors 50 --per-second 5

Starts the load test's stack (loadtest/stack.py: a throwaway PostgreSQL or BENCH_DATABASE_URL,
the simulated Telegram with 40 ms on every call and its limits off, botedge's api, one worker and
panel-api), then one bot polling. A content sits
behind two gate channels the visitors have not joined, so each `/start` costs two
`getChatMember` calls (at once) before the gate message is queued and sent. Visitors arrive at
a steady rate; the wait is from handing the message to the simulated Telegram to the gate
message reaching it, both on this machine's clock. Prints p50, p99 and max.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "loadtest"))

from stack import add_bot, stack  # noqa: E402

TELEGRAM_BOT_ID = 7000001
TOKEN = f"{TELEGRAM_BOT_ID}:AA" + "b" * 33
CHANNELS = (-1007000000001, -1007000000002)


def setup(url: str, sim: str, env: dict[str, str]) -> None:
    add_bot(env, TOKEN, "polling")
    for chat in CHANNELS:
        httpx.post(
            f"{sim}/_sim/chats",
            json={
                "id": chat,
                "type": "channel",
                "username": f"ch{abs(chat)}",
                "admin_bots": [TELEGRAM_BOT_ID],
            },
        ).raise_for_status()
    with psycopg.connect(url) as conn:
        bot = conn.execute("SELECT id FROM bots").fetchone()
        assert bot is not None  # noqa: S101 - add-bot succeeded
        for chat in CHANNELS:
            conn.execute(
                "WITH c AS (INSERT INTO channels (telegram_chat_id, title, username, is_gate)"
                " VALUES (%s, 'Sponsor', %s, true) RETURNING id)"
                " INSERT INTO bot_channels (bot_id, channel_id, status, is_admin, default_gate)"
                " SELECT %s, id, 'administrator', true, true FROM c",
                (chat, f"ch{abs(chat)}", bot[0]),
            )
        conn.execute(
            "INSERT INTO contents (bot_id, code, kind, body) VALUES (%s, 'promo', 'text', 'Hi')",
            (bot[0],),
        )


def wait_polling(sim: str) -> None:
    """Until the worker, started before the bot was added, has taken it up and long-polls."""
    deadline = time.monotonic() + 60
    while httpx.get(f"{sim}/_sim/inflight").json().get("getupdates", 0) < 1:
        if time.monotonic() > deadline:
            raise SystemExit("the worker never polled for the bot")
        time.sleep(0.1)


def drive(sim: str, visitors: int, per_second: float) -> list[float]:
    handed: dict[int, float] = {}
    with httpx.Client(timeout=10) as client:
        began = time.monotonic()
        for n in range(visitors):
            # A steady arrival rate, not a burst: what one visitor waits, not the bot's 25/s.
            due = began + n / per_second
            time.sleep(max(0.0, due - time.monotonic()))
            user = 10_000 + n
            handed[user] = time.time()
            client.post(
                f"{sim}/_sim/messages",
                json={"bot_id": TELEGRAM_BOT_ID, "user_id": user, "text": "/start promo"},
            ).raise_for_status()
        deadline = time.monotonic() + 120
        first: dict[int, float] = {}
        while len(first) < visitors and time.monotonic() < deadline:
            sent: list[dict[str, Any]] = client.get(f"{sim}/_sim/sent").json()
            for row in sent:
                if row["chat_id"] in handed and row["chat_id"] not in first:
                    first[row["chat_id"]] = float(row["at"])
            time.sleep(0.2)
    if len(first) < visitors:
        raise SystemExit(f"only {len(first)} of {visitors} visitors got the gate message")
    return [first[user] - handed[user] for user in handed]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--visitors", type=int, default=50)
    parser.add_argument("--per-second", type=float, default=5.0)
    parser.add_argument("--telegram-ms", type=float, default=40.0)
    args = parser.parse_args()
    limits_off = {"SIM_ENFORCE_LIMITS": "false"}
    with stack(
        workers=1,
        telegram_ms=args.telegram_ms,
        sim_env=limits_off,
        worker_env={"TELEGRAM_POLL_TIMEOUT": "10"},
    ) as running:
        sim = running.get("telegram").url
        setup(running.database_url, sim, running.env)
        wait_polling(sim)
        waits = drive(sim, args.visitors, args.per_second)
    waits.sort()
    # Nearest rank: a value that was measured.
    p99 = waits[max(0, math.ceil(0.99 * len(waits)) - 1)]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"/start to gate message, {args.visitors} visitors at {args.per_second:g}/s, "
        f"Telegram {args.telegram_ms:g} ms, two gate channels, one worker (polling):"
    )
    print(
        f"  p50 {statistics.median(waits) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
        f"max {waits[-1] * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
