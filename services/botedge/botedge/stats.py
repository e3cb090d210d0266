"""Statistics events, written in the transaction of what they count. Most ride on a statement
the update runs anyway: a /start or a block on the person's upsert (`bot_store.record_person`),
a pass of the gate and a first delivery on the delivery's insert, campaign joins and leaves on
their crediting, payments on billing's. The gate shown is written here. The hourly roll-up is
`botedge.rollup`."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from botedge import sqlq
from shared.db import Connection

Q = sqlq.Q

Kind = Literal["start", "gate_shown", "gate_passed", "content_delivered", "blocked"]


async def record(
    conn: Connection,
    kind: Kind,
    bot_id: int,
    person_id: int | None,
    at: dt.datetime,
    content_id: int | None = None,
) -> None:
    await conn.execute(
        Q["record_stat"],
        {
            "kind": kind,
            "bot_id": bot_id,
            "person_id": person_id,
            "at": at,
            "content_id": content_id,
        },
    )
