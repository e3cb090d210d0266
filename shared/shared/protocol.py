"""uvicorn's httptools protocol with a deadline for reading a request.

uvicorn closes idle keep-alive connections, but nothing closes a connection that sends half its
headers, or headers and half a body, and then waits: each such client holds a socket and a
slot for ever (slow loris). Here a request must arrive whole, headers and body, within
`read_timeout` seconds of its first byte (of the connection's opening, for the first request);
otherwise the connection is closed. A handler waiting on the body then sees the client gone.

httptools (a C parser) rather than h11 (pure Python): in the reference load, with uvloop as
well, botedge's api spent 9.6 s of CPU instead of 12.3 s, and the simulated Telegram 26.6 s
instead of 35.0 s.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("shared.protocol")


def protocol_of(app: Any) -> type[HttpToolsProtocol]:
    """The protocol an app asks to be served with (`app.state.http_protocol`, a subclass of
    uvicorn's), else uvicorn's."""
    state = getattr(app, "state", None)
    return getattr(state, "http_protocol", None) or HttpToolsProtocol


def with_read_deadline(
    read_timeout: float, base: type[HttpToolsProtocol] = HttpToolsProtocol
) -> type[HttpToolsProtocol]:
    """A protocol class whose connections must deliver each request within the deadline."""

    class ReadDeadlineProtocol(base):  # type: ignore[valid-type,misc]
        _deadline: asyncio.TimerHandle | None = None
        # Part of a request has arrived and its end has not.
        _partial = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._deadline is None:
                # The first bytes of a new request on a kept-alive connection.
                self._arm()
            super().data_received(data)
            if not self._partial:
                self._disarm()

        def on_message_begin(self) -> None:
            self._partial = True
            super().on_message_begin()

        def on_message_complete(self) -> None:
            self._partial = False
            super().on_message_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # A pipelined request already buffered may be part-read.
            if not self._partial:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(read_timeout, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            log.info(
                "closing a connection that sent no whole request in %.0f s",
                read_timeout,
                extra={"event": "read_timeout"},
            )
            self.transport.close()

    return ReadDeadlineProtocol
