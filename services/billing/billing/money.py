"""Exact amounts: decimal text in major units <-> whole minor units, by ISO 4217 exponent.

Never through a float: `"149.00"` and `149` are the same UAH amount, `"0.1"` + `"0.2"` is
exactly `"0.3"`.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_ZERO = frozenset("BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF".split())
_THREE = frozenset("BHD IQD JOD KWD LYD OMR TND".split())
_FOUR = frozenset("CLF UYW".split())
_TWO = frozenset(
    """AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD BTN BWP
    BYN BZD CAD CDF CHE CHF CHW CNY COP COU CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP
    GBP GEL GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK
    LBP LKR LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK
    NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP
    STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS VED VES WST XCD XCG YER
    ZAR ZMW ZWG""".split()
)
# Telegram Stars: whole stars, not ISO but priced the same way.
_STARS = frozenset({"XTR"})

# ASCII digits only: `\d` and Decimal also read other scripts' digits (U+0661 U+0660 is 10).
_DECIMAL_TEXT = re.compile(r"(0|[1-9][0-9]{0,17})(\.[0-9]{1,8})?", re.ASCII)


class AmountError(ValueError):
    """An amount or currency that cannot be read exactly."""


def exponent(currency: str) -> int:
    if currency in _TWO:
        return 2
    if currency in _ZERO or currency in _STARS:
        return 0
    if currency in _THREE:
        return 3
    if currency in _FOUR:
        return 4
    raise AmountError(f"unknown currency {currency!r}")


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
    places = exponent(currency)
    value = Decimal(amount_minor).scaleb(-places)
    return f"{value:.{places}f}"
