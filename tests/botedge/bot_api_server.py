"""A real HTTP server on loopback for the Bot API client's tests: it answers each request with
what the test tells it to, and remembers what it was sent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from botedge.telegram import BotApi, BotClients


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
