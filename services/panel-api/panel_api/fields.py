"""The fields several features' bodies share: ids, currencies, prices and periods, each with the
limits the API documents, a price read into minor units, and an amount shown in major units."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from panel_api import errors
from shared.currencies import CODES, exponent, major_text, minor_units
from shared.units import decimal_text

# Ids are PostgreSQL integers.
ID_LIMIT = 2**31
Id = Annotated[int, msgspec.Meta(ge=1, lt=ID_LIMIT)]

Currency = Annotated[str, msgspec.Meta(pattern=r"^[A-Z]{3}$", extra_json_schema={"enum": CODES})]
Price = Annotated[str, msgspec.Meta(max_length=20, pattern=r"^[0-9]{1,13}(\.[0-9]{1,6})?$")]
PeriodDays = Annotated[int, msgspec.Meta(ge=1, le=3660)]
GraceDays = Annotated[int, msgspec.Meta(ge=0, le=365)]

# The most a plan may cost, in minor units.
MAX_PRICE_MINOR = 10**12


def price_minor(price: str, currency: str, prefix: str = "", field: str = "price") -> int:
    """A price as a person types it ("12.50" USD, "500" JPY) in the currency's minor units;
    a refusal names `prefix` + the field (`field` for the price)."""
    if exponent(currency) is None:
        raise errors.InvalidValue(
            f"{currency} is not a currency", field=f"{prefix}currency", code="not-one-of"
        )
    minor = minor_units(price, currency)
    if minor is None:
        raise errors.InvalidValue(
            f"{currency} has {exponent(currency)} digits after the point",
            field=f"{prefix}{field}",
            code="too-precise",
        )
    if not 0 < minor <= MAX_PRICE_MINOR:
        raise errors.InvalidValue(
            "the amount is zero or too high", field=f"{prefix}{field}", code="out-of-range"
        )
    return minor


# Amounts in minor units, as text: exact whatever their size.
Minor = str

MembershipStatus = Literal["active", "grace", "expired"]

# The ad shop's coins, in six-digit base units (USDT micros, sun): not ISO currencies, so not
# in the table billing prices invoices by.
TRON_COINS = ("USDT", "TRX")


class Priced(msgspec.Struct, kw_only=True):
    """An amount in minor units with its currency, and the same amount as text in major units
    with the currency's own digits ("12.50", "500" yen, "1.250" dinars) for people."""

    amount_minor: Minor
    currency: str
    amount: str = ""

    def __post_init__(self) -> None:
        self.amount = major(self.amount_minor, self.currency)


def major(minor: Minor, currency: str) -> str:
    if currency in TRON_COINS:
        return decimal_text(int(minor))
    return major_text(minor, currency)
