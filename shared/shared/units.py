"""TRON amounts in their base units (USDT micros, TRX sun, both 6 decimals) as text people
read, and TRX priced from USDT at a locked rate. Exact: Decimal, never a float."""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal

SCALE = 6


def decimal_text(base_units: int) -> str:
    """12_500_000 -> "12.5", 100_000_000 -> "100" (plain digits, never "1E+2")."""
    return format(Decimal(base_units).scaleb(-SCALE).normalize(), "f")


def sun_for(micros: int, usdt_per_trx: Decimal) -> int:
    """The least sun worth at least `micros` at the rate; billing credits TRX as
    floor(sun x rate), so paying this much always covers the amount."""
    if usdt_per_trx <= 0:
        raise ValueError("the rate must be above zero")
    return int((Decimal(micros) / usdt_per_trx).to_integral_value(rounding=ROUND_CEILING))
