from __future__ import annotations

import pytest

from shared.settings import CommonSettings, Reader, Secret, SettingsError


def test_secret__hidden_in_repr_and_str() -> None:
    secret = Secret("hunter2-very-secret")
    assert "hunter2" not in repr(secret)
    assert "hunter2" not in str(secret)
    assert "hunter2" not in repr({"token": secret})
    assert secret.reveal() == "hunter2-very-secret"


def test_secret__matches_compares_values() -> None:
    secret = Secret("abc123")
    assert secret.matches("abc123")
    assert secret.matches(b"abc123")
    assert not secret.matches("abc124")
    assert not secret.matches("")


def test_reader__missing_required_names_the_variable() -> None:
    with pytest.raises(SettingsError) as error:
        Reader({}).secret("SERVICE_TOKEN")
    assert error.value.variable == "SERVICE_TOKEN"
    assert str(error.value) == "SERVICE_TOKEN: is required"


def test_reader__short_secret_is_refused() -> None:
    with pytest.raises(SettingsError, match="JWT_SECRET: must be at least 32 bytes"):
        Reader({"JWT_SECRET": "short"}).secret("JWT_SECRET", min_bytes=32)


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"PORT": "http"}, "PORT"),
        ({"PORT": "70000"}, "PORT"),
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL"),
        ({"DB_POOL_MAX": "0"}, "DB_POOL_MAX"),
        ({"DB_POOL_MIN": "11", "DB_POOL_MAX": "10"}, "DB_POOL_MIN"),
        ({"REQUEST_READ_TIMEOUT": "0"}, "REQUEST_READ_TIMEOUT"),
        ({"KEEP_ALIVE_TIMEOUT": "0.5"}, "KEEP_ALIVE_TIMEOUT"),
        ({"DATABASE_URL": "mysql://x"}, "DATABASE_URL"),
    ],
)
def test_common__bad_values_name_their_variable(env: dict[str, str], variable: str) -> None:
    base = {"DATABASE_URL": "postgresql://u@h/db"}
    with pytest.raises(SettingsError) as error:
        CommonSettings.read(Reader({**base, **env}), "svc", 8000)
    assert error.value.variable == variable


def test_common__defaults_and_recorded_names() -> None:
    reader = Reader({"DATABASE_URL": "postgresql://u:pw@h/db", "LOG_LEVEL": "debug"})
    settings = CommonSettings.read(reader, "svc", 8123)
    assert settings.port == 8123
    assert settings.log_level == "DEBUG"
    assert settings.host == "127.0.0.1"
    assert "pw" not in repr(settings)
    assert {"DATABASE_URL", "PORT", "LOG_LEVEL", "HOST"} <= set(reader.names)


def test_reader__url_must_be_http() -> None:
    with pytest.raises(SettingsError, match="TRONGRID_URL"):
        Reader({"TRONGRID_URL": "ftp://x"}).url("TRONGRID_URL")
    assert Reader({}).url("X", "http://127.0.0.1:8001/") == "http://127.0.0.1:8001"


def test_reader__fernet_keys() -> None:
    with pytest.raises(SettingsError, match="BOT_TOKEN_KEY"):
        Reader({"BOT_TOKEN_KEY": "not-a-key"}).fernet_keys("BOT_TOKEN_KEY")
    key = "x" * 43 + "="
    assert Reader({"BOT_TOKEN_KEY": key}).fernet_keys("BOT_TOKEN_KEY").reveal() == key


def test_reader__networks() -> None:
    networks = Reader({"TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1 ,::1"}).networks("TRUSTED_PROXIES")
    assert [str(n) for n in networks] == ["10.0.0.0/8", "127.0.0.1/32", "::1/128"]
    assert Reader({}).networks("TRUSTED_PROXIES") == ()
    with pytest.raises(SettingsError, match=r"TRUSTED_PROXIES: 'proxy\.local' is not"):
        Reader({"TRUSTED_PROXIES": "proxy.local"}).networks("TRUSTED_PROXIES")
