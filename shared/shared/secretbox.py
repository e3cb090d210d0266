"""Secrets at rest: Fernet with key rotation (the first key encrypts, every key decrypts)."""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from shared.settings import Secret


class SecretBoxError(Exception):
    """A ciphertext that none of the configured keys opens."""


class SecretBox:
    def __init__(self, keys: Secret) -> None:
        self._fernet = MultiFernet(
            [Fernet(part.strip().encode()) for part in keys.reveal().split(",") if part.strip()]
        )

    def seal(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def open(self, ciphertext: str) -> str:
        try:
            return self._fernet.decrypt(ciphertext.encode()).decode()
        except InvalidToken:
            raise SecretBoxError("no configured key opens this value") from None

    def __repr__(self) -> str:
        return "SecretBox(**********)"
