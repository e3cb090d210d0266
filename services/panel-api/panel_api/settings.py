"""Panel API settings, read once at start from an injected mapping."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from panel_api.passwords import DEFAULT_ROUNDS, MAX_ROUNDS, MIN_ROUNDS
from shared.settings import CommonSettings, Networks, Reader, Secret

DEFAULT_PORT = 8003


@dataclass(frozen=True)
class PanelSettings:
    common: CommonSettings
    jwt_secret: Secret
    service_token: Secret
    bot_token_key: Secret
    billing_url: str
    botedge_url: str
    trusted_proxies: Networks
    # bcrypt's cost for passwords set from now on; stored hashes keep the cost they were made at.
    bcrypt_rounds: int = DEFAULT_ROUNDS

    @property
    def secrets(self) -> list[Secret | None]:
        return [
            self.common.database_url,
            self.common.database_password,
            self.jwt_secret,
            self.service_token,
            self.bot_token_key,
        ]


def read(r: Reader) -> PanelSettings:
    return PanelSettings(
        common=CommonSettings.read(r, "panel-api", DEFAULT_PORT),
        jwt_secret=r.secret("JWT_SECRET", min_bytes=32),
        service_token=r.secret("SERVICE_TOKEN", min_bytes=16),
        bot_token_key=r.fernet_keys("BOT_TOKEN_KEY"),
        billing_url=r.url("BILLING_URL", "http://127.0.0.1:8001"),
        botedge_url=r.url("BOTEDGE_URL", "http://127.0.0.1:8002"),
        trusted_proxies=r.networks("TRUSTED_PROXIES"),
        bcrypt_rounds=r.integer(
            "BCRYPT_ROUNDS", DEFAULT_ROUNDS, minimum=MIN_ROUNDS, maximum=MAX_ROUNDS
        ),
    )


def load(env: Mapping[str, str]) -> PanelSettings:
    return read(Reader(env))
