"""bcrypt's cost as one setting: hashes made at it, checks at whatever cost was stored."""

from __future__ import annotations

import asyncio

import pytest

from panel_api.passwords import DEFAULT_ROUNDS, Passwords
from panel_api.settings import load
from shared.settings import SettingsError
from tests.conftest import SECRETS


def settings_env(**extra: str) -> dict[str, str]:
    return {"DATABASE_URL": "postgresql://u@h/db", **SECRETS, **extra}


def test_settings__bcrypt_rounds_default_to_twelve() -> None:
    assert load(settings_env()).bcrypt_rounds == DEFAULT_ROUNDS == 12


def test_settings__bcrypt_rounds_read_from_the_environment() -> None:
    assert load(settings_env(BCRYPT_ROUNDS="11")).bcrypt_rounds == 11


@pytest.mark.parametrize("rounds", ["9", "4", "32", "twelve"])
def test_settings__bcrypt_rounds_below_ten_or_not_a_cost_refused_naming_the_variable(
    rounds: str,
) -> None:
    with pytest.raises(SettingsError, match="BCRYPT_ROUNDS"):
        load(settings_env(BCRYPT_ROUNDS=rounds))


def test_passwords__hash_made_at_the_set_cost() -> None:
    assert Passwords(5).hash("a password").startswith("$2b$05$")


def test_passwords__check_reads_the_cost_the_hash_was_made_with() -> None:
    stored = Passwords(5).hash("a password")
    assert asyncio.run(Passwords(4).check("a password", stored)) is True
    assert asyncio.run(Passwords(4).check("another", stored)) is False


def test_passwords__nothing_stored_or_over_72_bytes_never_matches() -> None:
    passwords = Passwords(4)
    long = "x" * 73
    assert asyncio.run(passwords.check("a password", None)) is False
    # bcrypt would read only the first 72 bytes; such a password is never ours.
    assert asyncio.run(passwords.check(long, passwords.hash(long[:72]))) is False
