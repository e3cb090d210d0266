"""The one TLS context a process's HTTP clients share: built once, checking certificates, from
the bundle the environment names as httpx would."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from shared.tls import verified


def test_tls__one_context_for_the_process_that_checks_names_and_certificates() -> None:
    context = verified()
    assert verified() is context
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname is True
    assert context.cert_store_stats()["x509_ca"] > 0


def test_tls__the_bundle_named_by_ssl_cert_file_is_the_one_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "no-such-bundle.pem"))
    with pytest.raises(FileNotFoundError):
        verified.__wrapped__()
