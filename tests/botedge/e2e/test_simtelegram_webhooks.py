"""The simulated Telegram delivers webhooks as Telegram does: a queue per chat, each in order
with one update in flight, up to `max_connections` chats at once; a failing chat holds only
itself. It also charges for new connections when told, and keeps bounded logs."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shared.testing import serve_in_thread
from shared.tls import verified
from simulators.telegram.app import create_app
from simulators.telegram.state import Faults
from tests.botedge.conftest import new_token
from tests.conftest import HTTP, wait_until

FAILING_CHAT = 7001
HOLD_SECONDS = 0.15


@dataclass
class Receiver:
    """A webhook that takes HOLD_SECONDS per update and refuses FAILING_CHAT's first three."""

    arrivals: list[tuple[int, int, float, float, int]] = field(default_factory=list)
    refusals: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The first `held` updates wait for `release` before they are answered.
    held: int = 0
    release: threading.Event = field(default_factory=threading.Event)
    entered: int = 0

    def app(self) -> Starlette:
        async def hook(request: Request) -> Response:
            update = await request.json()
            chat = update["message"]["chat"]["id"]
            started = time.monotonic()
            with self.lock:
                self.entered += 1
                hold = self.entered <= self.held
            if hold:
                await asyncio.to_thread(self.release.wait, 30)
            await asyncio.sleep(HOLD_SECONDS)
            with self.lock:
                if chat == FAILING_CHAT and self.refusals < 3:
                    self.refusals += 1
                    return Response(status_code=500)
                self.arrivals.append(
                    (chat, update["update_id"], started, time.monotonic(), len(self.arrivals))
                )
            return JSONResponse({})

        return Starlette(routes=[Route("/hook", hook, methods=["POST"])])


@pytest.fixture
def sim_url() -> Iterator[str]:
    with serve_in_thread(create_app(Faults(enforce_limits=False, log_limit=50))) as url:
        yield url


def call(base: str, token: str, method: str, **params: Any) -> Any:
    answer = HTTP.post(f"{base}/bot{token}/{method}", json=params).json()
    assert answer["ok"], answer
    return answer["result"]


def message(chat: int, text: str) -> dict[str, Any]:
    return {"message": {"message_id": 1, "date": 0, "chat": {"id": chat}, "text": text}}


def test_webhook__each_chat_in_order_up_to_max_connections_and_a_failing_chat_holds_only_itself(
    sim_url: str,
) -> None:
    receiver = Receiver()
    token = new_token(5552001)
    chats = [FAILING_CHAT, 7002, 7003, 7004, 7005, 7006]
    updates = [message(chat, f"{chat}-{n}") for n in range(3) for chat in chats]
    assert HTTP.post(f"{sim_url}/_sim/updates", json={"token": token, "updates": updates})
    with serve_in_thread(receiver.app()) as hook_url:
        call(sim_url, token, "setWebhook", url=f"{hook_url}/hook", max_connections=3)
        wait_until(lambda: len(receiver.arrivals) == len(updates), 30, "every update delivered")
        info = call(sim_url, token, "getWebhookInfo")
    assert (info["pending_update_count"], info["max_connections"]) == (0, 3)

    arrivals = receiver.arrivals
    for chat in chats:
        mine = [a for a in arrivals if a[0] == chat]
        assert [a[1] for a in mine] == sorted(a[1] for a in mine)
        # One in flight per chat: each starts after the one before it was answered.
        assert all(later[2] >= earlier[3] for earlier, later in itertools.pairwise(mine))
    # Several chats at once, never more than max_connections.
    moments = [a[2] + HOLD_SECONDS / 2 for a in arrivals]
    overlaps = [sum(1 for a in arrivals if a[2] <= m <= a[3]) for m in moments]
    assert max(overlaps) == 3
    # The refused chat held only itself: the others were all delivered before its last one.
    last_of_failing = max(a[4] for a in arrivals if a[0] == FAILING_CHAT)
    assert receiver.refusals == 3
    assert all(a[4] < last_of_failing for a in arrivals if a[0] != FAILING_CHAT)


def test_webhook__max_connections_lowered_while_delivering_holds_from_then_on(
    sim_url: str,
) -> None:
    chats = [7101, 7102, 7103, 7104, 7105, 7106]
    # The first round is held in flight while the limit is lowered, so that nothing the
    # simulator sent before the change can reach the hook after it.
    receiver = Receiver(held=len(chats))
    token = new_token(5552003)
    updates = [message(chat, f"{chat}-{n}") for n in range(4) for chat in chats]
    assert HTTP.post(f"{sim_url}/_sim/updates", json={"token": token, "updates": updates})
    with serve_in_thread(receiver.app()) as hook_url:
        call(sim_url, token, "setWebhook", url=f"{hook_url}/hook", max_connections=6)
        wait_until(lambda: receiver.entered >= 6, 30, "the first round in flight")
        call(sim_url, token, "setWebhook", url=f"{hook_url}/hook", max_connections=2)
        lowered = time.monotonic()
        receiver.release.set()
        wait_until(lambda: len(receiver.arrivals) == len(updates), 60, "every update delivered")

    arrivals = receiver.arrivals
    before = [a for a in arrivals if a[2] < lowered]
    after = [a for a in arrivals if a[2] > lowered]
    # Six at once before; from the change on, never more than two, and still two at once.
    assert max(sum(1 for b in before if b[2] <= a[2] + 0.01 <= b[3]) for a in before) == 6
    overlaps = [sum(1 for b in arrivals if b[2] <= m <= b[3]) for m in (a[2] + 0.01 for a in after)]
    assert (len(before), len(after)) == (6, 18)
    assert max(overlaps) == 2
    for chat in chats:
        assert [a[1] for a in arrivals if a[0] == chat] == sorted(
            a[1] for a in arrivals if a[0] == chat
        )


def test_webhook_deleted__undelivered_updates_go_back_to_get_updates_in_order(
    sim_url: str,
) -> None:
    token = new_token(5552002)
    # A webhook nobody answers: everything stays undelivered.
    call(sim_url, token, "setWebhook", url="http://127.0.0.1:9/hook")
    added = HTTP.post(
        f"{sim_url}/_sim/updates",
        json={"token": token, "updates": [message(7100 + n % 3, str(n)) for n in range(6)]},
    ).json()["update_ids"]
    wait_until(
        lambda: call(sim_url, token, "getWebhookInfo")["pending_update_count"] == 6,
        10,
        "six pending",
    )
    call(sim_url, token, "deleteWebhook")
    wait_until(
        lambda: [u["update_id"] for u in call(sim_url, token, "getUpdates", timeout=0)] == added,
        10,
        "the six back in order",
    )


def test_connect_delay__charged_once_per_new_connection() -> None:
    with serve_in_thread(create_app(Faults(enforce_limits=False, connect_delay_ms=400))) as url:
        token = new_token(5552003)

        def timed(client: httpx.Client) -> float:
            started = time.monotonic()
            assert client.post(f"{url}/bot{token}/getMe").json()["ok"]
            return time.monotonic() - started

        with httpx.Client(verify=verified()) as client:
            first, again = timed(client), timed(client)
        with httpx.Client(verify=verified()) as fresh:
            new = timed(fresh)
    assert first >= 0.4 and new >= 0.4
    assert again < 0.4


def test_logs__only_the_newest_calls_kept(sim_url: str) -> None:
    token = new_token(5552004)
    for _ in range(60):
        call(sim_url, token, "getMe")
    calls = HTTP.get(f"{sim_url}/_sim/calls", params={"bot_id": 5552004}).json()
    assert len(calls) == 50
