"""An ad order's steps that the owner takes through the panel: approve (the shop's address
and, for TRX, a locked rate copied in), reject, cancel. Each runs under the order's advisory
lock, the one crediting takes, so a step and a payment never interleave."""

from __future__ import annotations

import datetime as dt
from typing import Any

from psycopg.types.json import Jsonb

from billing import errors
from billing.rates import Rate
from billing.sqlq import Q
from shared.db import Connection


async def read(conn: Connection, order_id: int) -> dict[str, Any]:
    """The order as approval needs it; what would refuse the approval, refused now."""
    cur = await conn.execute(Q["ad_order_brief"], {"id": order_id})
    row = await cur.fetchone()
    if row is None:
        raise errors.UnknownAdOrder("no ad order by that id")
    if row["status"] != "requested":
        raise errors.OrderConflict(f"the order is {row['status']}, not requested")
    await _shop_address(conn)
    return dict(row)


async def _shop_address(conn: Connection) -> str:
    cur = await conn.execute(Q["shop_address"])
    shop = await cur.fetchone()
    if shop is None or not shop["tron_address"]:
        raise errors.NoShopAddress("set the shop's TRON address first")
    return str(shop["tron_address"])


async def _locked(conn: Connection, order_id: int) -> dict[str, Any]:
    await conn.execute(Q["lock_ad_order"], {"id": order_id})
    cur = await conn.execute(Q["ad_order_for_step"], {"id": order_id})
    row = await cur.fetchone()
    if row is None:
        raise errors.UnknownAdOrder("no ad order by that id")
    return dict(row)


async def approve(
    conn: Connection, order_id: int, rate: Rate | None, now: dt.datetime, pay_hours: float
) -> dict[str, Any]:
    order = await _locked(conn, order_id)
    if order["status"] != "requested":
        raise errors.OrderConflict(f"the order is {order['status']}, not requested")
    pay_to = await _shop_address(conn)
    if order["accepts_trx"] and rate is None:
        raise errors.RateUnavailable("no TRX rate to lock")
    cur = await conn.execute(
        Q["approve_ad_order"],
        {
            "id": order_id,
            "now": now,
            "pay_to": pay_to,
            "trx_rate": rate.usdt_per_trx if rate and order["accepts_trx"] else None,
            "trx_rate_source": rate.source if rate and order["accepts_trx"] else None,
            "trx_rate_at": rate.at if rate and order["accepts_trx"] else None,
            "due_at": now + dt.timedelta(hours=pay_hours),
        },
    )
    answer = _json(await cur.fetchone())
    await _event(conn, order_id, "approved", answer, "approval", now)
    return answer


async def end(
    conn: Connection, order_id: int, status: str, allowed: tuple[str, ...], now: dt.datetime
) -> dict[str, Any]:
    order = await _locked(conn, order_id)
    if order["status"] not in allowed:
        raise errors.OrderConflict(f"the order is {order['status']}; it cannot be {status}")
    cur = await conn.execute(Q["end_ad_order"], {"id": order_id, "status": status, "now": now})
    return _json(await cur.fetchone())


def _json(row: Any) -> dict[str, Any]:
    if row is None:
        raise errors.StoreError("the order row was not written")
    return {
        key: value.isoformat() if isinstance(value, dt.datetime) else value
        for key, value in dict(row).items()
    }


async def _event(
    conn: Connection, order_id: int, kind: str, detail: dict[str, Any], cause: str, now: dt.datetime
) -> None:
    await conn.execute(
        Q["insert_ad_order_event"],
        {"order_id": order_id, "kind": kind, "detail": Jsonb(detail), "cause": cause, "now": now},
    )
