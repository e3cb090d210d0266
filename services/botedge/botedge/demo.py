"""`python -m botedge.demo`: `make run`'s demo gate in the simulated Telegram.

The demo paid channel and two sponsor channels exist there with the demo bot as their admin;
the bot manages the paid channel (sold for 5 USD a month or 50 USD a year, coupon `WELCOME20`
taking 20% off the year for newcomers, `/start pay_<id>`), and a content
`welcome` sits behind the two sponsors; a private channel, the club, is where the demo's
campaigns invite people (Telegram names the link of a join only in a private chat). The
shop has an address (unless one was set) and the bot an ad slot for 10 USDT or TRX. Safe to
run again. Prints what the launcher shows: the link, the channels and the content's id.
"""

from __future__ import annotations

import json
import os
import sys

import httpx
import psycopg
from psycopg.rows import dict_row

from botedge import sqlq
from shared.clock import SYSTEM_CLOCK

PAID = (-1001234567890, "Demo paid channel", "gatehouse_demo")
# Anyone's address on the simulated chain: the demo shop is paid there.
SHOP = "TV1KhjB8LLx2mE4BDED5WfWMnwpzmj2rzQ"
SPONSORS = ((-1001234567001, "Demo news", "demo_news"), (-1001234567002, "Demo talk", "demo_talk"))
CLUB = (-1001234567003, "Demo club", None)


def main() -> int:
    sim = os.environ["TELEGRAM_API_BASE"].rstrip("/")
    telegram_bot_id = int(os.environ["DEMO_BOT_TOKEN"].split(":", 1)[0])
    for chat_id, title, username in (PAID, *SPONSORS, CLUB):
        httpx.post(
            f"{sim}/_sim/chats",
            json={
                "id": chat_id,
                "type": "channel",
                "title": title,
                **({"username": username} if username else {}),
                "admin_bots": [telegram_bot_id],
            },
            timeout=10,
        ).raise_for_status()
    q = sqlq.Q
    now = SYSTEM_CLOCK.now()
    with psycopg.connect(os.environ["DATABASE_URL"], row_factory=dict_row) as conn:
        bot = conn.execute(q["demo_bot"], {"telegram_bot_id": telegram_bot_id}).fetchone()
        if bot is None:
            print("the demo bot is not registered", file=sys.stderr)
            return 1
        for chat_id, title, username in (PAID, *SPONSORS, CLUB):
            conn.execute(
                q["demo_channel"],
                {
                    "bot_id": bot["id"],
                    "chat_id": chat_id,
                    "title": title,
                    "username": username,
                    "is_gate": chat_id in (s[0] for s in SPONSORS),
                    "now": now,
                },
            )
        conn.execute(q["demo_manager"], {"bot_id": bot["id"], "chat_id": PAID[0]})
        conn.execute(q["demo_paid"], {"chat_id": PAID[0]})
        conn.execute(q["demo_yearly"], {"chat_id": PAID[0], "now": now})
        conn.execute(q["demo_stars"], {"chat_id": PAID[0]})
        paid = conn.execute(q["channel_by_chat"], {"chat_id": PAID[0]}).fetchone()
        club = conn.execute(q["channel_by_chat"], {"chat_id": CLUB[0]}).fetchone()
        content = conn.execute(q["demo_content"], {"bot_id": bot["id"]}).fetchone()
        conn.execute(q["demo_shop_address"], {"address": SHOP})
        conn.execute(q["demo_ad_slot"], {"bot_id": bot["id"]})
    assert content is not None and paid is not None and club is not None  # noqa: S101 - the rows were just written
    print(
        json.dumps(
            {
                "bot_id": bot["id"],
                "link": f"https://t.me/{bot['username']}?start=welcome",
                "content_id": content["id"],
                "sponsors": [chat_id for chat_id, _, _ in SPONSORS],
                "paid": PAID[0],
                "paid_channel_id": paid["id"],
                "club": CLUB[0],
                "club_channel_id": club["id"],
                "shop": SHOP,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
