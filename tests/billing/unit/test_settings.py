"""The gateway registry: the one list settings, verifiers and the bot's offer are built from."""

from __future__ import annotations

import dataclasses

from billing.app import build_verifiers
from billing.gateways import BY_NAME, GATEWAYS
from billing.settings import BillingSettings, read
from shared.settings import Reader
from simulators.checkout.app import PRESS
from tests.conftest import SECRETS


def settings_with(**env: str) -> BillingSettings:
    return read(Reader({**SECRETS, "DATABASE_URL": "postgresql://u:p@h/db", **env}))


def test_registry__every_gateway_has_a_pay_url_setting_and_a_verifier() -> None:
    settings = settings_with()
    assert settings.pay_urls == {g.name: g.pay_url for g in GATEWAYS}
    assert set(build_verifiers(settings)) == set(BY_NAME)


def test_registry__a_pay_url_setting_overrides_the_registrys_default() -> None:
    settings = settings_with(
        STRIPE_PAY_URL="http://127.0.0.1:8083/checkout/stripe/{order_reference}"
    )
    assert settings.pay_urls["stripe"].startswith("http://127.0.0.1:8083/")
    assert settings.pay_urls["subgate"] == BY_NAME["subgate"].pay_url


def test_registry__a_gateway_without_its_secret_is_off() -> None:
    settings = dataclasses.replace(settings_with(), stripe_webhook_secrets=())
    assert set(build_verifiers(settings)) == set(BY_NAME) - {"stripe"}


def test_registry__the_simulated_checkout_presses_pay_for_every_gateway() -> None:
    assert set(PRESS) == set(BY_NAME)
