from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.currencies import major_text, minor_units


@pytest.mark.parametrize(
    ("amount", "currency", "minor"),
    [
        ("12.50", "USD", 1250),
        ("12.5", "USD", 1250),
        ("12", "USD", 1200),
        ("500", "JPY", 500),
        ("1.250", "KWD", 1250),
        ("0.001", "KWD", 1),
        ("25", "XTR", 25),
    ],
)
def test_minor_units__by_the_currencys_exponent(amount: str, currency: str, minor: int) -> None:
    assert minor_units(amount, currency) == minor


@pytest.mark.parametrize(
    ("amount", "currency"),
    [("9.999", "USD"), ("5.5", "JPY"), ("1.0001", "KWD"), ("1.5", "XTR"), ("1", "ABC")],
)
def test_minor_units__none_for_digits_the_currency_has_not(amount: str, currency: str) -> None:
    assert minor_units(amount, currency) is None


@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(["USD", "JPY", "KWD", "XTR"]))
def test_minor_units__undoes_major_text(minor: int, currency: str) -> None:
    assert minor_units(major_text(minor, currency), currency) == minor
