"""Telegram Stars' pre-checkout under a backlog: Telegram allows 10 s for the answer.

    make bench-precheckout     # or: python loadtest/bench_precheckout.py --waiting 10000

Starts the load test's stack with billing (loadtest/stack.py: a throwaway PostgreSQL, the
simulated Telegram with 40 ms on every call and its limits off, botedge's api and one worker),
one webhook bot and a channel sold in Stars. Each payer gets an invoice (billing's, sent with
`sendInvoice`). Then `--waiting` ordinary messages from 2,000 people arrive at once, and while
the worker works through them the payers pay one after another: each `pre_checkout_query` is
answered by the api as it comes in, after billing's check. Prints the answer times (p50,
p100), the backlog each payment met, and how long the worker took to work the backlog off,
which is how long a query queued behind it would have waited.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "loadtest"))

from stack import add_bot, stack  # noqa: E402

TELEGRAM_BOT_ID = 7000002
TOKEN = f"{TELEGRAM_BOT_ID}:AA" + "c" * 33
PRICE = 250
PEOPLE = 2_000


def setup(url: str, env: dict[str, str]) -> int:
    add_bot(env, TOKEN, "webhook")
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "WITH c AS (INSERT INTO channels (telegram_chat_id, title, is_paid)"
            " VALUES (-1007000000101, 'Stars club', true) RETURNING id)"
            " INSERT INTO plans (channel_id, price_minor, currency, period_days, grace_days,"
            " is_default) SELECT id, %s, 'XTR', 30, 3, true FROM c RETURNING channel_id",
            (PRICE,),
        ).fetchone()
        assert row is not None  # noqa: S101 - just inserted
        return int(row[0])


def invoices(
    client: httpx.Client, billing: str, sim: str, token: str, channel: int, payers: int
) -> list[tuple[int, str]]:
    made = []
    for n in range(payers):
        user = 900_000 + n
        answer = client.post(
            f"{billing}/internal/invoices",
            json={"telegram_user_id": user, "channel_id": channel, "gateway": "telegram_stars"},
            headers={"Authorization": f"Bearer {token}"},
        )
        answer.raise_for_status()
        reference = str(answer.json()["order_reference"])
        client.post(
            f"{sim}/bot{TOKEN}/sendInvoice",
            json={
                "chat_id": user,
                "title": "Stars club",
                "description": "30 days of access to Stars club",
                "payload": reference,
                "currency": "XTR",
                "prices": [{"label": "Month", "amount": PRICE}],
            },
        ).raise_for_status()
        made.append((user, reference))
    return made


def waiting(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM inbox WHERE state <> 'done'").fetchone()
        return int(row[0]) if row else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--waiting", type=int, default=10_000)
    parser.add_argument("--payers", type=int, default=20)
    parser.add_argument("--telegram-ms", type=float, default=40.0)
    args = parser.parse_args()
    with (
        stack(
            workers=1,
            telegram_ms=args.telegram_ms,
            sim_env={"SIM_ENFORCE_LIMITS": "false"},
            billing=True,
        ) as running,
        httpx.Client(timeout=30) as client,
    ):
        sim = running.get("telegram").url
        channel = setup(running.database_url, running.env)
        payers = invoices(
            client,
            running.get("billing").url,
            sim,
            running.env["SERVICE_TOKEN"],
            channel,
            args.payers,
        )
        began = time.monotonic()
        for start in range(0, args.waiting, 1_000):
            batch = [
                {"bot_id": TELEGRAM_BOT_ID, "user_id": 100_000 + n % PEOPLE, "text": f"hi {n}"}
                for n in range(start, min(args.waiting, start + 1_000))
            ]
            client.post(f"{sim}/_sim/messages", json={"messages": batch}).raise_for_status()
        seconds: list[float] = []
        met: list[int] = []
        for user, reference in payers:
            met.append(waiting(running.database_url))
            paid = client.post(
                f"{sim}/_sim/pay",
                json={"bot_id": TELEGRAM_BOT_ID, "user_id": user, "payload": reference},
            ).json()
            if not paid.get("ok"):
                raise SystemExit(f"payment of {user} refused or unanswered: {paid}")
            seconds.append(float(paid["seconds"]))
        # The api's own share: billing's check and the answer, from its histogram.
        metrics = client.get(f"{running.get('botedge-api').url}/metrics").text
        own = {
            line.split()[0]: float(line.split()[1])
            for line in metrics.splitlines()
            if line.startswith("botedge_pre_checkout_seconds_")
        }
        while waiting(running.database_url) > 0:
            if time.monotonic() - began > 600:
                raise SystemExit("the backlog was not worked off in 10 minutes")
            time.sleep(0.5)
        drained = time.monotonic() - began
    seconds.sort()
    p100 = seconds[-1]
    p50 = statistics.median(seconds)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"Stars pre-checkout, {args.payers} payments one after another, {args.waiting:,} "
        f"messages arriving at once, Telegram {args.telegram_ms:g} ms, one worker (webhook):"
    )
    print(
        f"  answered: p50 {p50 * 1000:.0f} ms, p100 {p100 * 1000:.0f} ms (Telegram allows 10 s); "
        f"backlog met: {max(met):,} at most, {min(met):,} at least"
    )
    count = own.get("botedge_pre_checkout_seconds_count", 0.0) or 1.0
    under = own.get('botedge_pre_checkout_seconds_bucket{le="0.25"}', 0.0)
    print(
        f"  of which in the api (billing's check and the answer): mean "
        f"{own.get('botedge_pre_checkout_seconds_sum', 0.0) / count * 1000:.0f} ms, "
        f"{under:.0f} of {count:.0f} under 250 ms"
    )
    print(
        f"  the worker worked the backlog off in {drained:.1f} s: a query queued behind it "
        f"would have waited up to that long"
    )


if __name__ == "__main__":
    main()
