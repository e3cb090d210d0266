"""uvicorn's h11 protocol with a deadline for reading a request.

uvicorn closes idle keep-alive connections, but nothing closes a connection that sends half its
headers, or headers and half a body, and then waits: each such client holds a socket and a
slot for ever (slow loris). Here a request must arrive whole, headers and body, within
`read_timeout` seconds of its first byte (of the connection's opening, for the first request);
otherwise the connection is closed. A handler waiting on the body then sees the client gone.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("shared.protocol")

# The client's side of the current request is in; nothing more to wait for.
_REQUEST_IN = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR)


def with_read_deadline(read_timeout: float) -> type[H11Protocol]:
    """An h11 protocol class whose connections must deliver each request within the deadline."""

    class ReadDeadlineProtocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._deadline is None and self.conn.their_state not in _REQUEST_IN:
                # The first bytes of a new request on a kept-alive connection.
                self._arm()
            super().data_received(data)
            if self.conn.their_state in _REQUEST_IN:
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # A pipelined request already buffered whole was read by the call above.
            if self.conn.their_state in _REQUEST_IN:
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
            if self.transport.is_closing() or self.conn.their_state in _REQUEST_IN:
                return
            log.info(
                "closing a connection that sent no whole request in %.0f s",
                read_timeout,
                extra={"event": "read_timeout"},
            )
            self.transport.close()

    return ReadDeadlineProtocol
