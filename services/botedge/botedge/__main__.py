"""`python -m botedge --role api|worker`: serve webhooks, or claim and handle updates.

Also: `python -m botedge replay <inbox id>` puts a dead update back in line,
`python -m botedge prune [--days 7]` deletes old handled updates and finished sends, and
`python -m botedge add-bot [--mode polling|webhook]` (token in BOT_TOKEN) registers a bot.
"""

from __future__ import annotations

import argparse
import os
import sys

from shared import lifecycle
from shared import logging as jsonlog
from shared.clock import SYSTEM_CLOCK
from shared.settings import Reader, Secret, exit_on_error


def serve(role: str) -> None:
    from botedge.app import create_api_app, create_worker_app
    from botedge.settings import load

    settings = exit_on_error(lambda: load(os.environ, role))
    jsonlog.configure(f"botedge-{role}", settings.common.log_level, settings.secrets)
    app = create_api_app(settings) if role == "api" else create_worker_app(settings)
    lifecycle.run_service(app, settings.common)


def replay(inbox_id: int) -> int:
    from botedge import inbox_store
    from shared.db import connect

    database_url = exit_on_error(lambda: Reader(os.environ).database_url())
    jsonlog.configure("botedge-replay", "INFO", [database_url])

    async def run() -> int | None:
        conn = await connect(database_url.reveal())
        async with conn:
            bot_id = await inbox_store.replay(conn, inbox_id)
            await conn.commit()
            if bot_id is not None:
                await conn.execute("SELECT pg_notify('inbox', %s)", (str(bot_id),))
                await conn.commit()
            return bot_id

    if lifecycle.run(run()) is None:
        print(f"no dead update with id {inbox_id}", file=sys.stderr)
        return 1
    print(f"update {inbox_id} is waiting again")
    return 0


def prune(days: int, every: float | None) -> int:
    import psycopg

    from botedge import inbox_store, outbox_store
    from botedge.sqlq import Q
    from shared.db import connect
    from shared.periodic import run_every

    database_url = exit_on_error(lambda: Reader(os.environ).database_url())
    jsonlog.configure("botedge-prune", "INFO", [database_url])

    async def run() -> tuple[int, int, int]:
        conn = await connect(database_url.reveal())
        now = SYSTEM_CLOCK.now()
        async with conn, conn.transaction():
            return (
                await inbox_store.prune(conn, days, now),
                await outbox_store.prune(conn, days, now),
                (await conn.execute(Q["prune_conversations"], {"days": days, "now": now})).rowcount,
            )

    def job() -> None:
        inbox, outbox, steps = lifecycle.run(run())
        print(
            f"deleted {inbox} handled updates, {outbox} finished sends and {steps} expired"
            f" conversations older than {days} days",
            flush=True,
        )

    return run_every("prune", job, every, (psycopg.Error, OSError))


def add_bot(token: str, mode: str) -> int:

    from botedge.errors import BotedgeError
    from botedge.registration import register
    from botedge.settings import load
    from botedge.telegram import BotApi, BotClients
    from shared.db import create_pool
    from shared.secretbox import SecretBox

    settings = exit_on_error(lambda: load(os.environ, "api"))
    jsonlog.configure("botedge-add-bot", "WARNING", [*settings.secrets, Secret(token)])

    async def run() -> dict[str, object]:
        pool = create_pool(settings.common)
        await pool.open(wait=True, timeout=10)
        try:
            async with BotClients() as telegram:
                api = BotApi(telegram, settings.telegram_api_base)
                box = SecretBox(settings.bot_token_key)
                return await register(
                    pool, api, box, token, mode, settings.public_base_url, SYSTEM_CLOCK.now()
                )
        finally:
            await pool.close()

    try:
        result = lifecycle.run(run())
    except BotedgeError as error:
        print(f"could not add the bot: {error.detail}", file=sys.stderr)
        return 1
    print(f"bot {result['id']} (@{result['username']}) added in {mode} mode")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m botedge")
    parser.add_argument("--role", choices=("api", "worker"))
    commands = parser.add_subparsers(dest="command")
    replay_parser = commands.add_parser("replay", help="put a dead update back in line")
    replay_parser.add_argument("inbox_id", type=int)
    add_parser = commands.add_parser("add-bot", help="register a bot by its token")
    add_parser.add_argument("--token", default=os.environ.get("BOT_TOKEN"))
    add_parser.add_argument("--mode", choices=("polling", "webhook"), default="polling")
    prune_parser = commands.add_parser("prune", help="delete old handled updates and sends")
    prune_parser.add_argument("--days", type=int, default=7)
    prune_parser.add_argument("--every", type=float, default=None, metavar="SECONDS")
    args = parser.parse_args(argv)
    if args.command == "prune":
        # Telegram redelivers for up to 24 hours: an update's key must outlive that.
        if args.days < 2:
            parser.error("--days must be at least 2")
        return prune(args.days, args.every)
    if args.command == "replay":
        return replay(args.inbox_id)
    if args.command == "add-bot":
        if not args.token:
            parser.error("--token (or BOT_TOKEN) is required")
        return add_bot(args.token, args.mode)
    if args.role is None:
        parser.error("--role api|worker is required")
    serve(args.role)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
