"""Billing's settings, read once at start from an injected mapping."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from billing.gateways import GATEWAYS
from billing.rates import Source, parse_sources
from shared.settings import CommonSettings, Reader, Secret, SettingsError

DEFAULT_PORT = 8001
USDT_MAINNET = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"


def _stripe_secrets(value: str) -> str | None:
    for part in value.split(","):
        if not part.strip().startswith("whsec_"):
            return "each comma-separated secret must start with whsec_"
    return None


def _pay_url_problem(value: str) -> str | None:
    try:
        value.format(order_reference="ref", amount="1.00", currency="USD")
    except (KeyError, IndexError, ValueError):
        return "may use only {order_reference}, {amount} and {currency}"
    if not value.startswith(("https://", "http://")):
        return "must be an http(s) URL template"
    return None


@dataclass(frozen=True)
class BillingSettings:
    common: CommonSettings
    sweep_token: Secret
    service_token: Secret
    botedge_url: str
    trongrid_url: str
    trongrid_api_key: Secret | None
    subgate_webhook_secret: Secret | None
    wayforpay_merchant_account: str | None
    wayforpay_secret_key: Secret | None
    stripe_webhook_secrets: tuple[Secret, ...]
    pay_urls: dict[str, str]
    sweep_batch: int
    tron_usdt_contract: str = USDT_MAINNET
    tron_check_interval: float = 5.0
    trx_rate_sources: tuple[Source, ...] = ()
    ad_order_pay_hours: float = 24.0
    # A payer who has not used their invite gets one more from reconciliation, this long after.
    reconcile_resend_after: dt.timedelta = dt.timedelta(hours=24)

    @property
    def secrets(self) -> list[Secret | None]:
        return [
            self.common.database_url,
            self.common.database_password,
            self.sweep_token,
            self.service_token,
            self.trongrid_api_key,
            self.subgate_webhook_secret,
            self.wayforpay_secret_key,
            *self.stripe_webhook_secrets,
        ]


def read(r: Reader) -> BillingSettings:
    merchant = r.optional_text("WAYFORPAY_MERCHANT_ACCOUNT")
    wfp_key = r.optional_secret("WAYFORPAY_SECRET_KEY", min_bytes=8)
    if (merchant is None) != (wfp_key is None):
        missing = "WAYFORPAY_SECRET_KEY" if wfp_key is None else "WAYFORPAY_MERCHANT_ACCOUNT"
        raise SettingsError(missing, "is required when the other WayForPay variable is set")
    stripe = r.optional_secret("STRIPE_WEBHOOK_SECRET", check=_stripe_secrets)
    return BillingSettings(
        common=CommonSettings.read(r, "billing", DEFAULT_PORT),
        sweep_token=r.secret("SWEEP_TOKEN", min_bytes=16),
        service_token=r.secret("SERVICE_TOKEN", min_bytes=16),
        botedge_url=r.url("BOTEDGE_URL", "http://127.0.0.1:8002"),
        trongrid_url=r.url("TRONGRID_URL", "https://api.trongrid.io"),
        trongrid_api_key=r.optional_secret("TRONGRID_API_KEY"),
        subgate_webhook_secret=r.optional_secret("SUBGATE_WEBHOOK_SECRET", min_bytes=16),
        wayforpay_merchant_account=merchant,
        wayforpay_secret_key=wfp_key,
        stripe_webhook_secrets=tuple(
            Secret(part.strip()) for part in (stripe.reveal().split(",") if stripe else [])
        ),
        pay_urls={
            gateway.name: _checked(r, f"{gateway.name.upper()}_PAY_URL", gateway.pay_url)
            for gateway in GATEWAYS
        },
        sweep_batch=r.integer("SWEEP_BATCH", 500, minimum=1, maximum=100_000),
        tron_usdt_contract=_tron_address(r, "TRON_USDT_CONTRACT", USDT_MAINNET),
        tron_check_interval=r.seconds("TRON_CHECK_INTERVAL", 5.0, minimum=0.1),
        trx_rate_sources=_rate_sources(r),
        ad_order_pay_hours=r.seconds("AD_ORDER_PAY_HOURS", 24.0, minimum=0.01),
        reconcile_resend_after=dt.timedelta(
            hours=r.seconds("RECONCILE_RESEND_AFTER_HOURS", 24.0, minimum=0.0)
        ),
    )


def _rate_sources(r: Reader) -> tuple[Source, ...]:
    try:
        return parse_sources(r.text("TRX_RATE_SOURCES", "coingecko,kraken,binance"))
    except ValueError as error:
        raise SettingsError("TRX_RATE_SOURCES", str(error)) from None


def _tron_address(r: Reader, name: str, default: str) -> str:
    from tronpy.keys import is_base58check_address

    value = r.text(name, default)
    try:
        valid = bool(is_base58check_address(value))
    except ValueError:
        valid = False
    if not valid:
        raise SettingsError(name, "must be a TRON address in base58check (T...)")
    return value


def _checked(r: Reader, name: str, default: str) -> str:
    value = r.text(name, default)
    problem = _pay_url_problem(value)
    if problem is not None:
        raise SettingsError(name, problem)
    return value


def load(env: Mapping[str, str]) -> BillingSettings:
    return read(Reader(env))
