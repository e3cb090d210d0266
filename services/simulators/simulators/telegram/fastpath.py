"""The Bot API's calls answered by the connection itself: uvicorn's HTTP protocol, its
request cycle replaced for `/bot<token>/<method>` and `/_sim/messages`. It subclasses uvicorn's
`HttpToolsProtocol`, which is not a public interface: `tests/simulators/unit/test_fastpath.py`
fails on a uvicorn that changed what it relies on (docs/testing.md says what to check)."""

from __future__ import annotations

import logging
import re

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from shared.errors import Problem, too_large
from shared.web import CALLERS_MISTAKES, bad_values
from simulators.fields import json_fields
from simulators.telegram import control
from simulators.telegram.botapi import LONG_POLL, Params
from simulators.telegram.exchange import (
    BODY_LIMIT,
    Answer,
    Exchange,
    Ticks,
    answer_call,
    body_params,
)
from simulators.telegram.state import ApiError, World

log = logging.getLogger("simtelegram")


# The request target of a Bot API call: a path with nothing to unquote, and its query.
_BOT_TARGET = re.compile(rb"/bot([^/?%]+)/([^/?%]+)(?:\?(.*))?", re.DOTALL)


class _NoEvent:
    """What uvicorn's protocol sets when a body arrives; the call reads it when it is whole."""

    def set(self) -> None:
        pass


_NO_EVENT = _NoEvent()


# The load generator's batches of messages (`POST /_sim/messages`, 50 a second under the
# reference load): through Starlette's stack they cost the simulator as much as the messages.
_MESSAGES = b"/_sim/messages"


class _BotCall:
    """A Bot API call its connection answers itself, in place of uvicorn's request cycle: the
    fields the protocol reads and sets on a cycle are here. No token: a batch of messages."""

    __slots__ = (
        "agent",
        "body",
        "content_type",
        "disconnected",
        "keep_alive",
        "message_event",
        "more_body",
        "name",
        "query",
        "response_complete",
        "started",
        "token",
        "too_big",
    )

    def __init__(
        self,
        token: str | None,
        name: str,
        query: str,
        content_type: str,
        agent: str,
        keep_alive: bool,
    ) -> None:
        self.token = token
        self.name = name
        self.query = query
        self.content_type = content_type
        self.agent = agent
        self.keep_alive = keep_alive
        # Grown in place by uvicorn's `cycle.body += chunk`: bytes would copy the whole body
        # at every chunk, quadratic in an upload of 50 MB.
        self.body = bytearray()
        self.more_body = True
        self.started = False
        self.response_complete = False
        self.disconnected = False
        self.too_big = False
        self.message_event = _NO_EVENT

    def read(self) -> Params:
        if self.too_big:
            raise ApiError(413, "Request Entity Too Large")
        return body_params(self.query, self.content_type, bytes(self.body))

    def messages(self, world: World) -> Answer:
        """A batch of messages (a JSON body), answered as control_messages answers it."""
        if self.too_big:
            return Answer.problem(too_large(BODY_LIMIT))
        try:
            return Answer.json(200, control.add_messages(world, json_fields(bytes(self.body))))
        except Problem as problem:
            return Answer.problem(problem)
        except ApiError as error:
            return Answer.error(error)
        except CALLERS_MISTAKES as error:
            return Answer.problem(bad_values(error))


class _BotApiProtocol(HttpToolsProtocol):
    """uvicorn's protocol, answering the Bot API's calls itself: the ASGI request cycle, the
    task and the app's middleware and router cost the simulator more CPU than the call, and in
    the load test it shares the cores with what is measured (three calls an update on the gate
    path). An upload, a method other than GET or POST, a request queued behind another on its
    connection and every other path go on to the app."""

    world: World
    ticks: Ticks

    def on_headers_complete(self) -> None:
        call = self._bot_call()
        if call is None:
            super().on_headers_complete()
        else:
            self.cycle = call  # type: ignore[assignment]

    def on_body(self, body: bytes) -> None:
        call = self.cycle
        super().on_body(body)
        if isinstance(call, _BotCall) and not call.response_complete:
            if len(call.body) > BODY_LIMIT:
                # Answered now, and the connection closed on the rest.
                call.body = bytearray()
                call.too_big = True
                call.keep_alive = False
                self._start(call)
            else:
                # uvicorn pauses reading past 64 KiB until the app reads; here nothing will.
                self.flow.resume_reading()

    def on_message_complete(self) -> None:
        call = self.cycle
        super().on_message_complete()
        if isinstance(call, _BotCall):
            self._start(call)

    def _start(self, call: _BotCall) -> None:
        """Answered at once or from a timer; a task only for a long poll, which waits."""
        if call.started:
            return
        call.started = True
        if call.token is None:
            try:
                answer = call.messages(self.world)
            except Exception:
                log.exception("unhandled error in a batch of messages")
                answer = Answer.json(500, {"ok": False, "description": "Internal Server Error"})
            self._respond(call, answer)
            return
        if call.name == LONG_POLL:
            task = self.loop.create_task(self._long_poll(call, call.token))
            task.add_done_callback(self.tasks.discard)
            self.tasks.add(task)
            return
        exchange = Exchange(self.world, call.name, call.agent)
        exchange.begin(call.token, call.read, self.client)
        if exchange.wait:
            self.ticks.call_later(exchange.wait, lambda: self._respond(call, exchange.finish()))
        else:
            self._respond(call, exchange.finish())

    def _bot_call(self) -> _BotCall | None:
        if self.cycle is not None and not self.cycle.response_complete:
            return None
        method = self.parser.get_method()
        if method not in (b"GET", b"POST") or self.parser.should_upgrade():
            return None
        found = _BOT_TARGET.fullmatch(self.url)
        batch = found is None and method == b"POST" and self.url == _MESSAGES
        if found is None and not batch:
            return None
        content_type = agent = ""
        for key, value in self.headers:
            if key == b"content-type":
                content_type = value.decode("latin-1")
            elif key == b"user-agent":
                agent = value.decode("latin-1")
        if content_type.startswith("multipart/") or self.expect_100_continue:
            return None
        keep_alive = self.parser.get_http_version() != "1.0" and self.parser.should_keep_alive()
        if found is None:
            # A batch of messages. Form fields (a walk in a shell) go on to the app.
            if not content_type.startswith("application/json"):
                return None
            return _BotCall(None, "_sim/messages", "", content_type, agent, keep_alive)
        return _BotCall(
            found[1].decode("latin-1"),
            found[2].decode("latin-1").lower(),
            (found[3] or b"").decode("latin-1"),
            content_type,
            agent,
            keep_alive,
        )

    async def _long_poll(self, call: _BotCall, token: str) -> None:
        answer = await answer_call(
            self.world, self.ticks, token, call.name, self.client, call.agent, call.read
        )
        self._respond(call, answer)

    def _respond(self, call: _BotCall, answer: Answer) -> None:
        """Head and body in one write, then what uvicorn does when a response is done."""
        if call.response_complete:
            return
        call.response_complete = True
        if call.disconnected:
            return
        head = [
            STATUS_LINE[answer.status],
            *(b"%s: %s\r\n" % pair for pair in self.server_state.default_headers),
            b"content-type: %s\r\ncontent-length: %d\r\n"
            % (answer.content_type.encode(), len(answer.body)),
            *(f"{k.lower()}: {v}\r\n".encode("latin-1") for k, v in answer.headers),
            b"\r\n" if call.keep_alive else b"connection: close\r\n\r\n",
            answer.body,
        ]
        self.transport.write(b"".join(head))
        if not call.keep_alive:
            self.transport.close()
        self.on_response_complete()


def bot_api_protocol(world: World, ticks: Ticks) -> type[HttpToolsProtocol]:
    """`_BotApiProtocol` answering from `world`, its waits on `ticks`."""
    return type("BotApiProtocol", (_BotApiProtocol,), {"world": world, "ticks": ticks})
