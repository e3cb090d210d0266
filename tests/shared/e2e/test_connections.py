"""What a service does with clients that misbehave at the socket: slow, gone, or mid-failure."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable

import httpx

from tests.conftest import ServiceProcess, service_env, wait_until

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
    try:
        with httpx.Client(timeout=5) as client:
            for _ in range(20):
                assert client.post(f"{service.url}/echo", content=b"hi").content == b"hi"
        open_ = list(slow)

        def all_cut() -> bool:
            open_[:] = [sock for sock in open_ if not closed_by_server(sock)]
            return not open_

        wait_until(all_cut, 20, "every slow connection to be closed")
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
    pattern = re.compile(r'route="/echo",status="499"')
    wait_until(
        lambda: any(pattern.search(x) for x in metric_lines(service, "http_requests_total")),
        10,
        "the gone client to be counted",
    )
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
