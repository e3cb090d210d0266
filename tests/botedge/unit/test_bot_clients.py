"""The worker's Bot API transport (aiohttp, a session per bot) against a real server on
loopback that answers what each test tells it to."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

import pytest

from botedge.telegram import BotApi, BotClients, ServerError, TooManyRequests

TOKEN = "123456:" + "A" * 35
OTHER = "654321:" + "B" * 35


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Server:
    """Answers each request with `answer(seen)`: raw status line, headers and body."""

    answer: Callable[[Seen], bytes | None]
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (line.partition(":") for line in lines[1:] if line)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                seen = Seen(method, path, headers, body)
                self.seen.append(seen)
                reply = self.answer(seen)
                if reply is None:
                    # Never answer: the client's timeout has to end it.
                    await reader.read()
                    return
                writer.write(reply)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def http(status: str, body: bytes, *headers: str, content_type: str = "application/json") -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Type: {content_type}", *headers]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def ok(result: Any) -> bytes:
    return http("200 OK", json.dumps({"ok": True, "result": result}).encode())


def run(
    answer: Callable[[Seen], bytes | None],
    calls: Callable[[BotApi], Awaitable[Any]],
) -> tuple[Any, Server]:
    server = Server(answer)

    async def main() -> Any:
        listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        port = listening.sockets[0].getsockname()[1]
        try:
            async with BotClients() as clients:
                return await calls(BotApi(clients, f"http://127.0.0.1:{port}/"))
        finally:
            listening.close()
            await listening.wait_closed()

    return asyncio.run(main()), server


def test_json_call__posts_the_parameters_and_unwraps_the_result() -> None:
    result, server = run(
        lambda seen: ok({"status": "left"}),
        lambda api: api.call(TOKEN, "getChatMember", {"chat_id": -100, "user_id": 7}),
    )
    assert result == {"status": "left"}
    [seen] = server.seen
    assert (seen.method, seen.path) == ("POST", f"/bot{TOKEN}/getChatMember")
    assert seen.headers["content-type"] == "application/json"
    assert seen.headers["user-agent"].startswith("gatehouse-botedge/")
    assert json.loads(seen.body) == {"chat_id": -100, "user_id": 7}


def test_calls__keep_one_connection_per_bot_alive() -> None:
    async def calls(api: BotApi) -> None:
        for token in (TOKEN, TOKEN, TOKEN, OTHER, OTHER):
            await api.call(token, "getMe")

    _, server = run(lambda seen: ok(True), calls)
    assert len(server.seen) == 5
    # Three calls of one bot on one connection, two of the other on a second.
    assert server.connections == 2


def test_429__retry_after_from_the_header_when_the_body_has_none() -> None:
    body = json.dumps({"ok": False, "error_code": 429, "description": "Too Many Requests"})

    async def calls(api: BotApi) -> Any:
        with pytest.raises(TooManyRequests) as error:
            await api.call(TOKEN, "sendMessage", {"chat_id": 1, "text": "x"})
        return error.value

    error, _ = run(
        lambda seen: http("429 Too Many Requests", body.encode(), "Retry-After: 3"), calls
    )
    assert error.retry_after == 3


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            lambda seen: http("502 Bad Gateway", b"<html>502</html>", content_type="text/html"),
            "non-JSON answer (502)",
        ),
        (lambda seen: None, "getMe: timed out"),
    ],
    ids=["nginx-502", "no-answer"],
)
def test_unusable_answers__are_server_errors(
    answer: Callable[[Seen], bytes | None], expected: str
) -> None:
    async def calls(api: BotApi) -> Any:
        with pytest.raises(ServerError) as error:
            await api.call(TOKEN, "getMe", timeout=0.5)
        return error.value

    error, _ = run(answer, calls)
    assert error.description == expected


def test_refused_connection__is_a_server_error() -> None:
    async def main() -> ServerError:
        listening = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = listening.sockets[0].getsockname()[1]
        listening.close()
        await listening.wait_closed()
        async with BotClients() as clients:
            with pytest.raises(ServerError) as error:
                await BotApi(clients, f"http://127.0.0.1:{port}").call(TOKEN, "getMe")
        return error.value

    error = asyncio.run(main())
    assert error.description.startswith("getMe: Client")


def test_files__go_as_multipart_with_the_other_parameters_as_fields() -> None:
    result, server = run(
        lambda seen: ok({"message_id": 3}),
        lambda api: api.call(
            TOKEN,
            "sendPhoto",
            {"chat_id": 42, "caption": "Pay here", "reply_markup": {"inline_keyboard": []}},
            files={"photo": ("qr.png", b"\x89PNG-bytes", "image/png")},
        ),
    )
    assert result == {"message_id": 3}
    [seen] = server.seen
    head = f"Content-Type: {seen.headers['content-type']}\r\n\r\n".encode()
    parts = BytesParser(policy=HTTP).parsebytes(head + seen.body)
    fields = {
        part.get_param("name", header="content-disposition"): part for part in parts.iter_parts()
    }  # type: ignore[attr-defined]
    assert fields["chat_id"].get_content() == "42"
    assert fields["caption"].get_content() == "Pay here"
    assert json.loads(fields["reply_markup"].get_content()) == {"inline_keyboard": []}
    assert fields["photo"].get_content_type() == "image/png"
    assert fields["photo"].get_payload(decode=True) == b"\x89PNG-bytes"
