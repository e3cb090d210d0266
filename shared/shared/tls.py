"""One TLS context for every HTTP client a process makes.

httpx builds a verifying context for each client it makes, reading the whole CA bundle (about
25 ms of CPU each time); a service makes several clients, and the tests make them for every
app they serve. This one is built once, as httpx builds its own (`SSL_CERT_FILE` or
`SSL_CERT_DIR` when set, else certifi's bundle), and shared: an `SSLContext` may serve many
clients and threads at once.
"""

from __future__ import annotations

import functools
import os
import ssl

import certifi


@functools.cache
def verified() -> ssl.SSLContext:
    """The context that checks servers' certificates, for `httpx.Client(verify=...)`."""
    if cafile := os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=cafile)
    if capath := os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=capath)
    return ssl.create_default_context(cafile=certifi.where())
