"""An owner's texts reach the worker: each change bumps the bot's version and announces the
bot on `bot_texts` in its own transaction; a claimed update carries the version, and a worker
that kept an older one reads the bot's texts before it handles the update."""

from __future__ import annotations

import asyncio

import psycopg

from botedge import inbox_store
from botedge.access import RUNS_TO
from botedge.bot_texts import CHANNEL, OwnTexts
from botedge.ids import BotId
from botedge.words import Words
from tests.botedge.conftest import OpenPool, enqueue, insert_bot


def write(database_url: str, bot: int, language: str, text: str) -> None:
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "INSERT INTO bot_texts (bot_id, key, language, text, updated_at)"
            " VALUES (%s, %s, %s, %s, now()) ON CONFLICT (bot_id, key, language)"
            " DO UPDATE SET text = excluded.text",
            (bot, RUNS_TO.key, language, text),
        )


def test_owner_texts__a_write_bumps_the_version_and_announces_the_bot_at_commit(
    database_url: str,
) -> None:
    bot = insert_bot(database_url)[0]
    with psycopg.connect(database_url, autocommit=True) as listening:
        listening.execute(f"LISTEN {CHANNEL}")
        write(database_url, bot, "fa", "{title}: {until}")
        write(database_url, bot, "fa", "{until}: {title}")
        heard = [n.payload for n in listening.notifies(timeout=5, stop_after=2)]
    assert heard == [str(bot), str(bot)]
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT texts_version FROM bots WHERE id = %s", (bot,)).fetchone()
        assert row == (2,)
        # Gone back to the shipped text: a change too.
        conn.execute("DELETE FROM bot_texts WHERE bot_id = %s", (bot,))
        row = conn.execute("SELECT texts_version FROM bots WHERE id = %s", (bot,)).fetchone()
    assert row == (3,)


def test_owner_texts__an_update_claimed_with_a_newer_version_waits_for_the_bots_texts(
    database_url: str, open_pool: OpenPool
) -> None:
    bot = BotId(insert_bot(database_url)[0])
    write(database_url, bot, "fa", "نخست: {title} تا {until}")

    async def scenario() -> tuple[str, str]:
        async with open_pool() as pool:
            words = Words()
            texts = OwnTexts(pool, words)
            await texts.load()
            first = words.speech("fa", bot)(RUNS_TO, title="T", until="U")
            # Written again with no notice heard: the claimed update names the new version.
            write(database_url, bot, "fa", "دوم: {title} تا {until}")
            enqueue(database_url, bot, [(1, 9001, "/start")])
            async with pool.connection() as conn:
                [update] = await inbox_store.claim(conn, 10, 30, "t") or []
            assert update.texts_version == words.version(bot) + 1
            await texts.ready(update.bot_id, update.texts_version)
            return first, words.speech("fa", bot)(RUNS_TO, title="T", until="U")

    first, then = asyncio.run(scenario())
    assert first.startswith("نخست")
    assert then.startswith("دوم")
