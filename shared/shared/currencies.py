"""Each currency's exponent (ISO 4217: how many digits after the point its minor unit is),
the one table billing prices by and panel-api shows amounts by. Pure: no I/O, no imports of
the services."""

from __future__ import annotations

from decimal import Decimal

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
# Every code the table knows, for a schema's enum.
CODES = sorted(_ZERO | _THREE | _FOUR | _TWO | _STARS)


def exponent(currency: str) -> int | None:
    """Digits after the point; None for a code this table does not know."""
    if currency in _TWO:
        return 2
    if currency in _ZERO or currency in _STARS:
        return 0
    if currency in _THREE:
        return 3
    if currency in _FOUR:
        return 4
    return None


def major_text(amount_minor: int | str | Decimal, currency: str) -> str:
    """Minor units as major-unit text with the currency's digits: 1250 USD -> "12.50", 500 JPY
    -> "500", 1250 KWD -> "1.250". A code the table does not know is shown in minor units."""
    places = exponent(currency) or 0
    return f"{Decimal(amount_minor).scaleb(-places):.{places}f}"


def minor_units(amount: str, currency: str) -> int | None:
    """Major-unit decimal text as minor units: "12.50" USD -> 1250, "500" JPY -> 500; None when
    it has more digits after the point than the currency has, or the currency is unknown."""
    places = exponent(currency)
    if places is None:
        return None
    scaled = Decimal(amount).scaleb(places)
    return int(scaled) if scaled == scaled.to_integral_value() else None
