"""What a service does with clients that misbehave at the socket: slow, gone, or mid-failure."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable

import httpx

from tests.conftest import ServiceProcess, service_env

APP = "tests.shared.e2e.slow_app"


def connect(service: ServiceProcess) -> socket.socket:
    host, port = service.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server closed its side (EOF or reset), without blocking."""
    sock.setblocking(False)
    try:
        data = sock.recv(65536)
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        sock.setblocking(True)
    return data == b"" or closed_by_server(sock)


def metric_lines(service: ServiceProcess, name: str) -> list[str]:
    text = httpx.get(f"{service.url}/metrics").text
    return [line for line in text.splitlines() if line.startswith(name + "{")]


def test_slow_clients__cut_at_the_read_deadline_while_others_are_served(
    start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    service = start_service(APP, env=service_env(database_url, REQUEST_READ_TIMEOUT="1"))
    slow: list[socket.socket] = []
    for n in range(150):
        sock = connect(service)
        if n % 3 == 0:
            sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Le")  # half the headers
        elif n % 3 == 1:
            sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123")
        # else: connected, silent
        slow.append(sock)
    started = time.monotonic()
    try:
        with httpx.Client(timeout=5) as client:
            for _ in range(20):
                assert client.post(f"{service.url}/echo", content=b"hi").content == b"hi"
        open_ = list(slow)
        while open_ and time.monotonic() - started < 20:
            open_ = [sock for sock in open_ if not closed_by_server(sock)]
            time.sleep(0.05)
        assert not open_, f"{len(open_)} of {len(slow)} slow connections still open after 20 s"
    finally:
        for sock in slow:
            sock.close()
    output = service.output()
    assert '"level": "ERROR"' not in output
    assert not [line for line in metric_lines(service, "http_requests_total") if "500" in line]


def test_client_gone_mid_body__not_an_error(
    start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    service = start_service(APP, env=service_env(database_url))
    sock = connect(service)
    sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + b"a" * 100)
    sock.close()
    deadline = time.monotonic() + 10
    pattern = re.compile(r'route="/echo",status="499"')
    while not any(pattern.search(line) for line in metric_lines(service, "http_requests_total")):
        assert time.monotonic() < deadline, "the gone client was never counted"
        time.sleep(0.05)
    lines = metric_lines(service, "http_requests_total")
    assert not [line for line in lines if 'status="500"' in line]
    assert '"level": "ERROR"' not in service.output()


def test_unexpected_error__500_says_connection_close_and_closes(
    start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    service = start_service(APP, env=service_env(database_url))
    sock = connect(service)
    sock.sendall(b"GET /fail HTTP/1.1\r\nHost: x\r\n\r\n")
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    sock.close()
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 500")
    assert b"connection: close" in head.lower()
    assert b"internal-error" in body
    # One line for it, from us: not a second traceback from the server underneath.
    assert service.output().count('"level": "ERROR"') == 1


def test_method_label__bounded_to_the_routes_methods(
    start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    service = start_service(APP, env=service_env(database_url))
    with httpx.Client() as client:
        for method in ("BREW", "PROPFIND", "X-RANDOM-1", "X-RANDOM-2"):
            client.request(method, f"{service.url}/echo")
    methods = {
        re.search(r'method="([^"]+)"', line).group(1)  # type: ignore[union-attr]
        for line in metric_lines(service, "http_requests_total")
    }
    # GET and HEAD from the health checks; the four unknown methods are all `other`.
    assert methods - {"GET", "HEAD"} == {"other"}
