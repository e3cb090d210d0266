"""Bot edge settings, read once at start from an injected mapping."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from shared.settings import CommonSettings, Reader, Secret, SettingsError

API_PORT = 8002
WORKER_PORT = 8012
# Connections a worker needs beside its slots: the claim, lease renewals, sends being
# recorded, the gauges.
WORKER_SPARE_CONNECTIONS = 4
# A slot holds a connection only for its statements, never while it waits on Telegram (most of
# its time), so slots share connections. One for every four slots keeps the pool's queue short:
# a lease renewal waits behind at most a few transactions on each connection.
SLOTS_PER_CONNECTION = 4


@dataclass(frozen=True)
class BotedgeSettings:
    common: CommonSettings
    role: str
    service_token: Secret
    bot_token_key: Secret
    telegram_api_base: str
    public_base_url: str | None
    billing_url: str
    worker_slots: int
    lock_seconds: float
    max_attempts: int
    lease_seconds: float
    # The worker's presence: renewed every third of it; a worker silent this long (killed,
    # stalled, cut off) is gone, and its send and poll leases go to another at once.
    presence_seconds: float
    poll_timeout: int
    poll_interval: float
    retry_base: float
    send_lanes: int
    send_rate: float
    send_private_rate: float
    send_group_per_minute: float
    gauges_interval: float
    gate_retry_window: float = 600.0
    affinity_seconds: float = 0.5
    invite_link_hours: float = 24.0
    access_max_attempts: int = 8
    access_retry_base: float = 2.0
    rights_check_interval: float = 3600.0
    broadcast_batch: int = 500
    broadcast_window: int = 2000
    stats_interval: float = 60.0
    stat_days: int = 90

    @property
    def telegram_connections(self) -> int:
        """A worker's connections to Telegram for each bot: a slot's gate asks two channels at
        once, and the sender's lanes and a long poll run beside them, so one busy bot can have
        every slot in hand."""
        return 2 * self.worker_slots + self.send_lanes + 1

    @property
    def secrets(self) -> list[Secret | None]:
        return [
            self.common.database_url,
            self.common.database_password,
            self.service_token,
            self.bot_token_key,
        ]


def read(r: Reader, role: str) -> BotedgeSettings:
    port = API_PORT if role == "api" else WORKER_PORT
    pool_max = 10 if role == "api" else 20
    settings = BotedgeSettings(
        common=CommonSettings.read(r, f"botedge-{role}", port, default_pool_max=pool_max),
        role=role,
        service_token=r.secret("SERVICE_TOKEN", min_bytes=16),
        bot_token_key=r.fernet_keys("BOT_TOKEN_KEY"),
        telegram_api_base=r.url("TELEGRAM_API_BASE", "https://api.telegram.org"),
        public_base_url=r.optional_text("PUBLIC_BASE_URL"),
        billing_url=r.url("BILLING_URL", "http://127.0.0.1:8001"),
        worker_slots=r.integer("WORKER_SLOTS", 64, minimum=1, maximum=1024),
        lock_seconds=r.seconds("WORKER_LOCK_SECONDS", 60.0, minimum=1.0),
        max_attempts=r.integer("WORKER_MAX_ATTEMPTS", 5, minimum=1, maximum=100),
        lease_seconds=r.seconds("LEASE_SECONDS", 30.0, minimum=3.0),
        presence_seconds=r.seconds("PRESENCE_SECONDS", 1.5, minimum=0.3),
        poll_timeout=r.integer("TELEGRAM_POLL_TIMEOUT", 20, minimum=0, maximum=50),
        poll_interval=r.seconds("WORKER_POLL_INTERVAL", 1.0, minimum=0.05),
        retry_base=r.seconds("WORKER_RETRY_BASE", 1.0, minimum=0.01),
        send_lanes=r.integer("SEND_LANES", 4, minimum=1, maximum=64),
        send_rate=r.seconds("SEND_RATE", 25.0, minimum=0.1),
        send_private_rate=r.seconds("SEND_PRIVATE_RATE", 1.0, minimum=0.01),
        send_group_per_minute=r.seconds("SEND_GROUP_PER_MINUTE", 20.0, minimum=0.1),
        gauges_interval=r.seconds("GAUGES_INTERVAL", 5.0, minimum=0.1),
        gate_retry_window=r.seconds("GATE_RETRY_WINDOW", 600.0, minimum=1.0),
        affinity_seconds=r.seconds("WORKER_AFFINITY_SECONDS", 0.5, minimum=0.0),
        invite_link_hours=r.seconds("INVITE_LINK_HOURS", 24.0, minimum=0.1),
        access_max_attempts=r.integer("ACCESS_MAX_ATTEMPTS", 8, minimum=1, maximum=100),
        access_retry_base=r.seconds("ACCESS_RETRY_BASE", 2.0, minimum=0.01),
        rights_check_interval=r.seconds("RIGHTS_CHECK_INTERVAL", 3600.0, minimum=0.5),
        broadcast_batch=r.integer("BROADCAST_BATCH", 500, minimum=1, maximum=10_000),
        broadcast_window=r.integer("BROADCAST_WINDOW", 2000, minimum=1, maximum=100_000),
        stats_interval=r.seconds("STATS_INTERVAL", 60.0, minimum=0.1),
        stat_days=r.integer("STAT_DAYS", 90, minimum=1, maximum=3650),
    )
    check(settings)
    return settings


def check(settings: BotedgeSettings) -> None:
    """Combinations that would start and then quietly not work."""
    if settings.role == "worker":
        shared = math.ceil(settings.worker_slots / SLOTS_PER_CONNECTION)
        needed = shared + WORKER_SPARE_CONNECTIONS
        if settings.common.db_pool_max < needed:
            raise SettingsError(
                "DB_POOL_MAX",
                f"a worker with WORKER_SLOTS={settings.worker_slots} needs at least {needed} "
                f"connections, got {settings.common.db_pool_max}",
            )
    if settings.presence_seconds * 2 > settings.lease_seconds:
        raise SettingsError(
            "PRESENCE_SECONDS",
            f"must be at most half of LEASE_SECONDS={settings.lease_seconds:g}"
            f" (a lease outlives the presence that keeps it), got {settings.presence_seconds:g}",
        )
    # A long poll must end well inside the part of the lease its holder trusts (5/6 of it);
    # otherwise another worker takes the lease mid-poll and Telegram answers both with 409.
    trusted = settings.lease_seconds * 5 / 6
    if settings.poll_timeout + 5 > trusted:
        raise SettingsError(
            "TELEGRAM_POLL_TIMEOUT",
            f"must be at most {trusted - 5:.0f} with LEASE_SECONDS={settings.lease_seconds:g} "
            f"(a poll must end well inside the lease), got {settings.poll_timeout}",
        )


def load(env: Mapping[str, str], role: str) -> BotedgeSettings:
    return read(Reader(env), role)
