"""The circuit breaker's states on a clock the test moves: it opens on a failure ratio over a
window with a minimum volume, half-opens with one probe, and closes on success."""

from __future__ import annotations

import asyncio
import datetime as dt

import httpx
import pytest

from shared.breaker import (
    Breaker,
    BreakerOpen,
    Breakers,
    Policy,
    State,
    answer_failing,
    guarded,
)
from shared.clock import ManualClock

POLICY = Policy(window=30.0, volume=10, ratio=0.5, cool_off=5.0, max_cool_off=20.0)


def breaker() -> tuple[Breaker, ManualClock]:
    clock = ManualClock()
    return Breaker("telegram", "bot 1", POLICY, clock), clock


def test_fewer_calls_than_the_volume__never_open_however_many_fail() -> None:
    b, _ = breaker()
    for _ in range(9):
        b.failed()
    assert b.state is State.CLOSED
    assert b.wait() == 0.0


def test_ten_failures_in_the_window__open_and_refuse_until_the_cool_off() -> None:
    b, clock = breaker()
    for _ in range(10):
        b.failed()
    assert b.state is State.OPEN
    assert b.wait() == 5.0
    clock.advance(4.0)
    assert b.wait() == 1.0
    assert b.opened_at == clock.now() - dt.timedelta(seconds=4)


def test_failures_below_the_ratio__stay_closed() -> None:
    b, _ = breaker()
    for _ in range(6):
        b.succeeded()
    for _ in range(5):
        b.failed()
    assert b.state is State.CLOSED


def test_failures_outside_the_window__are_forgotten() -> None:
    b, clock = breaker()
    for _ in range(9):
        b.failed()
    clock.advance(31.0)
    b.failed()
    assert b.state is State.CLOSED


def test_half_open__one_probe_then_closed_on_its_success() -> None:
    b, clock = breaker()
    for _ in range(10):
        b.failed()
    clock.advance(5.0)
    # A look takes nothing; the first caller takes the probe, the next waits a moment.
    assert b.wait(take_probe=False) == 0.0
    assert b.wait() == 0.0
    assert b.state is State.HALF_OPEN
    assert 0 < b.wait() <= POLICY.recheck
    b.succeeded()
    assert b.state is State.CLOSED
    assert b.wait() == 0.0
    assert b.opened_at is None
    # Closed afresh: the failures before it opened are not held against it.
    b.failed()
    assert b.state is State.CLOSED


def test_half_open__a_failed_probe_opens_it_for_twice_as_long_up_to_the_most() -> None:
    b, clock = breaker()
    for _ in range(10):
        b.failed()
    first_opened = b.opened_at
    for cool_off in (10.0, 20.0, 20.0):
        clock.advance(b.wait())
        assert b.wait() == 0.0
        b.failed()
        assert b.state is State.OPEN
        assert b.wait() == cool_off
    # Still the same outage: "since" is when it first opened.
    assert b.opened_at == first_opened


def test_a_probe_that_never_reports__frees_the_slot_after_its_timeout() -> None:
    b, clock = breaker()
    for _ in range(10):
        b.failed()
    clock.advance(5.0)
    assert b.wait() == 0.0
    clock.advance(POLICY.probe_timeout)
    assert b.wait() == 0.0


def test_registry__one_breaker_per_dependency_and_target_and_reports_only_the_open() -> None:
    breakers = Breakers()
    one = breakers.get("telegram", "bot 1")
    assert breakers.get("telegram", "bot 1") is one
    assert breakers.get("telegram", "bot 2") is not one
    assert breakers.report() == {}
    for _ in range(10):
        one.failed()
    report = breakers.report()
    assert list(report) == ["telegram bot 1"]
    assert report["telegram bot 1"]["state"] == "open"
    assert report["telegram bot 1"]["since"]


# -- guarded: an HTTP dependency's calls behind its breaker (httpx.MockTransport) --------------


def answering(status: int | None) -> httpx.AsyncClient:
    """A client whose every call gets `status`, or no answer at all (None)."""

    def handle(request: httpx.Request) -> httpx.Response:
        if status is None:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(status, json={})

    return httpx.AsyncClient(transport=httpx.MockTransport(handle))


async def calls(b: Breaker, client: httpx.AsyncClient, n: int) -> tuple[int, int]:
    """`n` guarded calls: how many were made, and how many were refused unmade."""
    made = refused = 0
    for _ in range(n):
        try:
            await guarded(b, lambda: client.get("http://billing/internal/gateways"))
            made += 1
        except BreakerOpen as error:
            assert error.retry_after > 0
            refused += 1
        except httpx.HTTPError:
            made += 1
    return made, refused


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422, 429])
def test_guarded__answers_that_say_our_request_was_wrong_never_open_it(status: int) -> None:
    b, _ = breaker()
    assert asyncio.run(calls(b, answering(status), 30)) == (30, 0)
    assert b.state is State.CLOSED


@pytest.mark.parametrize("status", [500, 502, 503, 504, None])
def test_guarded__ten_5xx_or_unanswered_in_a_window_open_it_and_the_next_is_not_made(
    status: int | None,
) -> None:
    b, _ = breaker()
    assert asyncio.run(calls(b, answering(status), 12)) == (10, 2)
    assert b.state is State.OPEN


def test_guarded__the_probe_answered_closes_it() -> None:
    b, clock = breaker()
    asyncio.run(calls(b, answering(502), 10))
    clock.advance(5.0)
    assert asyncio.run(calls(b, answering(200), 3)) == (3, 0)
    assert b.state is State.CLOSED


def test_answer_failing__only_5xx() -> None:
    assert [
        s for s in (200, 201, 400, 429, 499, 500, 502, 599) if answer_failing(httpx.Response(s))
    ] == [500, 502, 599]
