"""Statistics events, written in the transaction of what they count, each riding on a
statement the update runs anyway: a /start or a block on the person's upsert
(`bot_store.record_person`), the gate shown on the finish that queues its message (`Counted` on
the reply), a pass of the gate and a first delivery on the delivery's insert, campaign joins
and leaves on their crediting, payments on billing's. The hourly roll-up is
`botedge.rollup`."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

Kind = Literal["start", "gate_shown", "gate_passed", "content_delivered", "blocked"]


@dataclass(frozen=True)
class Counted:
    """An event a reply stands for, written by the statement that queues the reply."""

    kind: Kind
    person_id: int | None
    at: dt.datetime
    content_id: int | None = None
