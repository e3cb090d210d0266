"""What a service does with clients that misbehave at the socket: slow, gone, or mid-failure."""

from __future__ import annotations

import http.client
import re
import socket
import time
from collections.abc import Callable

import httpx

from shared.lifecycle import GC_THRESHOLDS
from shared.settings import DEFAULT_KEEP_ALIVE, CommonSettings, Reader
from shared.tls import verified
from tests.conftest import HTTP, ServiceProcess, service_env, wait_until

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
    text = HTTP.get(f"{service.url}/metrics").text
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
        with httpx.Client(timeout=5, verify=verified()) as client:
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
    with httpx.Client(verify=verified()) as client:
        for method in ("BREW", "PROPFIND", "X-RANDOM-1", "X-RANDOM-2"):
            client.request(method, f"{service.url}/echo")
    methods = {
        re.search(r'method="([^"]+)"', line).group(1)  # type: ignore[union-attr]
        for line in metric_lines(service, "http_requests_total")
    }
    # GET and HEAD from the health checks; the four unknown methods are all `other`.
    assert methods - {"GET", "HEAD"} == {"other"}


def test_idle_keep_alive__closed_by_the_server_only_after_its_timeout(
    start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    service = start_service(APP, env=service_env(database_url, KEEP_ALIVE_TIMEOUT="1"))
    host, port = service.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        conn.request("POST", "/echo", body=b"hi")
        assert conn.getresponse().read() == b"hi"
        sock = conn.sock
        # Kept alive: a second request goes over the same connection.
        conn.request("POST", "/echo", body=b"again")
        assert conn.getresponse().read() == b"again"
        assert conn.sock is sock
        idle_since = time.monotonic()
        wait_until(lambda: closed_by_server(sock), 10, "the idle connection to be closed")
        assert time.monotonic() - idle_since >= 0.9
    finally:
        conn.close()


def test_keep_alive_default__outlasts_client_pools_so_clients_close_first() -> None:
    # httpx (and so panel-api's calls to billing and botedge) drops an idle connection after
    # keepalive_expiry; nginx upstream pools after 60 s. A server that closes first races the
    # client's next request on that connection, which then fails with no answer.
    httpx_expiry = httpx.Limits().keepalive_expiry
    assert httpx_expiry is not None
    assert DEFAULT_KEEP_ALIVE > max(httpx_expiry, 60.0)
    settings = CommonSettings.read(Reader({"DATABASE_URL": "postgresql://u@h/db"}), "svc", 8000)
    assert settings.keep_alive_timeout == DEFAULT_KEEP_ALIVE


def test_serving__startup_objects_frozen_out_of_the_collector_and_collections_rarer(
    start_service: Callable[..., ServiceProcess], database_url: str
) -> None:
    service = start_service(APP, env=service_env(database_url))
    seen = HTTP.get(f"{service.url}/collector").json()
    # Modules, routes and the pool: tens of thousands of objects no collection walks again.
    assert seen["frozen"] > 10_000
    assert tuple(seen["thresholds"]) == GC_THRESHOLDS
