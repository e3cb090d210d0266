"""Exact amounts: decimal text in major units <-> whole minor units, by ISO 4217 exponent.

Never through a float: `"149.00"` and `149` are the same UAH amount, `"0.1"` + `"0.2"` is
exactly `"0.3"`.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from shared.currencies import exponent as known_exponent
from shared.currencies import major_text

# ASCII digits only: `\d` and Decimal also read other scripts' digits (U+0661 U+0660 is 10).
_DECIMAL_TEXT = re.compile(r"(0|[1-9][0-9]{0,17})(\.[0-9]{1,8})?", re.ASCII)


class AmountError(ValueError):
    """An amount or currency that cannot be read exactly."""


def exponent(currency: str) -> int:
    places = known_exponent(currency)
    if places is None:
        raise AmountError(f"unknown currency {currency!r}")
    return places


def is_currency(code: str) -> bool:
    try:
        exponent(code)
    except AmountError:
        return False
    return True


def parse_major(text: str) -> Decimal:
    """A non-negative decimal written in major units (`"149"`, `"1547.36"`)."""
    if not _DECIMAL_TEXT.fullmatch(text):
        raise AmountError(f"amount {text!r} is not a plain decimal number")
    try:
        return Decimal(text)
    except InvalidOperation:
        raise AmountError(f"amount {text!r} is not a number") from None


def to_minor(amount: Decimal, currency: str) -> Decimal:
    """Minor units, exact; whole for any amount the currency can express."""
    return amount.scaleb(exponent(currency))


def minor_to_text(amount_minor: int, currency: str) -> str:
    """Minor units back to major-unit text with the currency's digits (`1250, USD -> "12.50"`)."""
    exponent(currency)  # refuses a code the table does not know, which major_text would show
    return major_text(amount_minor, currency)
