"""Settings read once from an injected mapping, typed and validated.

A service builds its frozen settings object with a `Reader` over `os.environ` (or any mapping
in tests). The first bad or missing variable raises `SettingsError` naming it; `exit_on_error`
turns that into one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import hmac
import ipaddress
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NoReturn, TypeVar
from urllib.parse import urlsplit

T = TypeVar("T")

Networks = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# Seconds a client has to send one whole request, headers and body.
DEFAULT_READ_TIMEOUT = 10.0
# Longer than any client's idle expiry (httpx 5 s, nginx upstreams 60 s): the client then always
# closes an idle connection first, and never sends a request into one the server is closing.
DEFAULT_KEEP_ALIVE = 75.0
# How long a service drains after SIGTERM (SHUTDOWN_TIMEOUT) unless told otherwise.
DEFAULT_SHUTDOWN_TIMEOUT = 8.0
SHUTDOWN_TIMEOUT_MINIMUM = 0.1


class SettingsError(Exception):
    """A variable is missing or malformed; the message starts with its name."""

    def __init__(self, variable: str, problem: str) -> None:
        super().__init__(f"{variable}: {problem}")
        self.variable = variable


class Secret:
    """A string that never shows itself in repr, str or logs."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def matches(self, candidate: str | bytes) -> bool:
        """Constant-time comparison with a presented credential."""
        if isinstance(candidate, str):
            candidate = candidate.encode()
        return hmac.compare_digest(self._value.encode(), candidate)

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and hmac.compare_digest(
            self._value.encode(), other._value.encode()
        )

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass
class Reader:
    """Reads typed variables from a mapping and remembers which names were asked for."""

    env: Mapping[str, str]
    names: list[str] = field(default_factory=list)
    secrets: list[Secret] = field(default_factory=list)

    def _raw(self, name: str) -> str | None:
        self.names.append(name)
        value = self.env.get(name)
        if value is None or value.strip() == "":
            return None
        return value.strip()

    def text(self, name: str, default: str | None = None) -> str:
        value = self._raw(name)
        if value is None:
            if default is None:
                raise SettingsError(name, "is required")
            return default
        return value

    def optional_text(self, name: str) -> str | None:
        return self._raw(name)

    def integer(self, name: str, default: int, *, minimum: int = 0, maximum: int = 2**31) -> int:
        value = self._raw(name)
        if value is None:
            return default
        try:
            number = int(value)
        except ValueError:
            raise SettingsError(name, f"must be a whole number, got {value!r}") from None
        if not minimum <= number <= maximum:
            raise SettingsError(name, f"must be between {minimum} and {maximum}, got {number}")
        return number

    def seconds(self, name: str, default: float, *, minimum: float = 0.0) -> float:
        value = self._raw(name)
        if value is None:
            return default
        try:
            number = float(value)
        except ValueError:
            raise SettingsError(name, f"must be a number of seconds, got {value!r}") from None
        if number < minimum:
            raise SettingsError(name, f"must be at least {minimum}, got {number}")
        return number

    def port(self, name: str, default: int) -> int:
        return self.integer(name, default, minimum=1, maximum=65535)

    def url(self, name: str, default: str | None = None) -> str:
        value = self.text(name, default)
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise SettingsError(name, "must be an http:// or https:// URL")
        return value.rstrip("/")

    def networks(self, name: str) -> Networks:
        """Comma-separated addresses or CIDR blocks; none when unset."""
        networks = []
        for part in (self._raw(name) or "").split(","):
            if not part.strip():
                continue
            try:
                networks.append(ipaddress.ip_network(part.strip(), strict=False))
            except ValueError:
                raise SettingsError(
                    name, f"{part.strip()!r} is not an address or CIDR block"
                ) from None
        return tuple(networks)

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        value = self.text(name, default)
        if choices == LOG_LEVELS:
            value = value.upper()
        if value not in choices:
            raise SettingsError(name, f"must be one of {', '.join(choices)}, got {value!r}")
        return value

    def secret(
        self,
        name: str,
        *,
        min_bytes: int = 1,
        check: Callable[[str], str | None] | None = None,
    ) -> Secret:
        value = self._raw(name)
        if value is None:
            raise SettingsError(name, "is required")
        return self._checked_secret(name, value, min_bytes, check)

    def optional_secret(
        self,
        name: str,
        *,
        min_bytes: int = 1,
        check: Callable[[str], str | None] | None = None,
    ) -> Secret | None:
        value = self._raw(name)
        if value is None:
            return None
        return self._checked_secret(name, value, min_bytes, check)

    def _checked_secret(
        self, name: str, value: str, min_bytes: int, check: Callable[[str], str | None] | None
    ) -> Secret:
        if len(value.encode()) < min_bytes:
            raise SettingsError(name, f"must be at least {min_bytes} bytes long")
        if check is not None:
            problem = check(value)
            if problem is not None:
                raise SettingsError(name, problem)
        secret = Secret(value)
        self.secrets.append(secret)
        return secret

    def fernet_keys(self, name: str) -> Secret:
        """One or more comma-separated Fernet keys; the first encrypts, all decrypt."""

        def check(value: str) -> str | None:
            from cryptography.fernet import Fernet

            for part in value.split(","):
                try:
                    Fernet(part.strip().encode())
                except (ValueError, TypeError):
                    return "must be comma-separated Fernet keys (32 url-safe base64 bytes each)"
            return None

        return self.secret(name, check=check)

    def database_url(self) -> Secret:
        def check(value: str) -> str | None:
            if not value.startswith(("postgresql://", "postgres://")):
                return "must be a postgresql:// connection URL"
            return None

        return self.secret("DATABASE_URL", check=check)


@dataclass(frozen=True)
class CommonSettings:
    """What every process reads: where the database is, how to listen, how to log."""

    service_name: str
    database_url: Secret
    host: str
    port: int
    log_level: str
    db_pool_min: int
    db_pool_max: int
    statement_timeout_ms: int
    shutdown_timeout: float
    migrations_dir: str | None
    request_read_timeout: float = DEFAULT_READ_TIMEOUT
    keep_alive_timeout: float = DEFAULT_KEEP_ALIVE
    # libpq's own variable, for a DATABASE_URL without a password (compose sets both): read
    # here only so that it is hidden from the logs like every other secret.
    database_password: Secret | None = None

    @classmethod
    def read(
        cls, r: Reader, service_name: str, default_port: int, *, default_pool_max: int = 10
    ) -> CommonSettings:
        settings = cls(
            service_name=service_name,
            database_url=r.database_url(),
            host=r.text("HOST", "127.0.0.1"),
            port=r.port("PORT", default_port),
            log_level=r.choice("LOG_LEVEL", "INFO", LOG_LEVELS),
            db_pool_min=r.integer("DB_POOL_MIN", 1, minimum=0, maximum=100),
            db_pool_max=r.integer("DB_POOL_MAX", default_pool_max, minimum=1, maximum=500),
            statement_timeout_ms=r.integer("DB_STATEMENT_TIMEOUT_MS", 15_000, minimum=100),
            shutdown_timeout=r.seconds(
                "SHUTDOWN_TIMEOUT", DEFAULT_SHUTDOWN_TIMEOUT, minimum=SHUTDOWN_TIMEOUT_MINIMUM
            ),
            migrations_dir=r.optional_text("MIGRATIONS_DIR"),
            request_read_timeout=r.seconds(
                "REQUEST_READ_TIMEOUT", DEFAULT_READ_TIMEOUT, minimum=0.1
            ),
            keep_alive_timeout=r.seconds("KEEP_ALIVE_TIMEOUT", DEFAULT_KEEP_ALIVE, minimum=1),
            database_password=r.optional_secret("PGPASSWORD"),
        )
        if settings.db_pool_min > settings.db_pool_max:
            raise SettingsError(
                "DB_POOL_MIN",
                f"must not exceed DB_POOL_MAX ({settings.db_pool_min} > {settings.db_pool_max})",
            )
        return settings


def exit_on_error(load: Callable[[], T]) -> T:
    """Run a settings loader; on a bad variable print one line naming it and exit 2."""
    try:
        return load()
    except SettingsError as error:
        _die(f"configuration error: {error}")


def _die(line: str) -> NoReturn:
    print(line, file=sys.stderr, flush=True)
    raise SystemExit(2)
