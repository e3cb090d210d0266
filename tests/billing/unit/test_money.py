from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billing.money import AmountError, exponent, minor_to_text, parse_major, to_minor


@pytest.mark.parametrize(
    ("text", "currency", "minor"),
    [
        ("149", "UAH", Decimal(14900)),
        ("149.00", "UAH", Decimal(14900)),
        ("1547.36", "UAH", Decimal(154736)),
        ("500", "JPY", Decimal(500)),
        ("1.234", "KWD", Decimal(1234)),
        ("0.1", "USD", Decimal(10)),
        ("12.505", "USD", Decimal("1250.5")),
    ],
)
def test_to_minor__exact(text: str, currency: str, minor: Decimal) -> None:
    assert to_minor(parse_major(text), currency) == minor


@pytest.mark.parametrize(
    "text",
    [
        *("", "1e3", "-5", "01.5", "1.", ".5", "NaN", "1,5", " 1", "12.50\n"),
        # Other scripts' digits: Arabic-Indic, Persian, Devanagari, fullwidth.
        *("1\u0660\u0660.\u0660\u0660", "\u06f1\u06f2", "\u0967", "\uff11\uff12.50"),
    ],
)
def test_parse_major__refuses_anything_but_plain_decimals(text: str) -> None:
    with pytest.raises(AmountError):
        parse_major(text)


def test_exponents() -> None:
    assert (exponent("USD"), exponent("JPY"), exponent("KWD"), exponent("XTR")) == (2, 0, 3, 0)
    with pytest.raises(AmountError):
        exponent("ABC")


@given(st.integers(min_value=0, max_value=10**15), st.sampled_from(["USD", "JPY", "KWD"]))
def test_minor_to_text__round_trips(minor: int, currency: str) -> None:
    assert to_minor(parse_major(minor_to_text(minor, currency)), currency) == minor
