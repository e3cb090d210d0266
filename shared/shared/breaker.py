"""A circuit breaker per dependency and target (Telegram per bot, TronGrid, billing, ...).

Closed, it counts the calls of a rolling window in one-second buckets. It opens when the
window holds at least `volume` calls and `ratio` of them failed: one bad request of ours
never opens it, a dependency failing most calls does. Open, it refuses calls without making
them for `cool_off` seconds; then it half-opens and lets exactly one call through as a probe.
The probe's success closes it; its failure opens it again, for twice as long up to
`max_cool_off`. Callers park work while it is open (`wait()` says for how long), so nothing
is dropped and nothing is retried hot.

What counts as the dependency failing is the caller's predicate, decided per error: an answer
that says our request was wrong (400, 401, 403, 429) is the dependency working.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum

import httpx
from prometheus_client import Counter, Gauge

from shared.clock import SYSTEM_CLOCK, Clock

BREAKER_STATE = Gauge(
    "gatehouse_breaker_state",
    "Each breaker's state: 0 closed, 1 half-open (one probe allowed), 2 open",
    ["dependency", "target"],
)
BREAKER_OPENINGS = Counter(
    "gatehouse_breaker_openings_total", "Times a breaker opened", ["dependency", "target"]
)


class State(Enum):
    CLOSED = 0
    HALF_OPEN = 1
    OPEN = 2


@dataclass(frozen=True)
class Policy:
    window: float = 30.0
    volume: int = 10
    ratio: float = 0.5
    cool_off: float = 5.0
    max_cool_off: float = 60.0
    # A probe that never reports (its caller cancelled) frees the half-open slot after this.
    probe_timeout: float = 20.0
    # While the probe is out, others look again this soon: a probe that succeeds in 40 ms
    # should not leave the parked work waiting for the probe's timeout.
    recheck: float = 0.5


class Breaker:
    def __init__(
        self, dependency: str, target: str, policy: Policy = Policy(), clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.dependency = dependency
        self.target = target
        self.policy = policy
        self.clock = clock
        self.state = State.CLOSED
        # (second, calls, failures), oldest first.
        self._buckets: deque[list[int]] = deque()
        self._reopen_at = 0.0
        self._cool_off = policy.cool_off
        self._probe_until = 0.0
        # Wall time it opened, for people ("unreachable since ..."); None while closed.
        self.opened_at: dt.datetime | None = None
        self._lock = threading.Lock()
        BREAKER_STATE.labels(dependency, target).set(0)

    def wait(self, *, take_probe: bool = True) -> float:
        """0 when a call may be made now (the probe, when half-open: taken by this caller,
        unless `take_probe` is False, a look that takes nothing); otherwise the seconds until
        one may."""
        with self._lock:
            now = self.clock.monotonic()
            if self.state is State.CLOSED:
                return 0.0
            if self.state is State.OPEN:
                if now < self._reopen_at:
                    return self._reopen_at - now
                self._set(State.HALF_OPEN)
            if now >= self._probe_until:
                if take_probe:
                    self._probe_until = now + self.policy.probe_timeout
                return 0.0
            return min(self._probe_until - now, self.policy.recheck)

    def succeeded(self) -> None:
        with self._lock:
            if self.state is not State.CLOSED:
                self._buckets.clear()
                self._cool_off = self.policy.cool_off
                self._probe_until = 0.0
                self.opened_at = None
                self._set(State.CLOSED)
            self._count(failed=False)

    def failed(self) -> None:
        with self._lock:
            now = self.clock.monotonic()
            if self.state is State.HALF_OPEN:
                self._cool_off = min(self._cool_off * 2, self.policy.max_cool_off)
                self._open(now)
                return
            if self.state is State.OPEN:
                return
            self._count(failed=True)
            calls = sum(b[1] for b in self._buckets)
            failures = sum(b[2] for b in self._buckets)
            if calls >= self.policy.volume and failures >= self.policy.ratio * calls:
                self._open(now)

    def _open(self, now: float) -> None:
        self._reopen_at = now + self._cool_off
        self._probe_until = 0.0
        if self.opened_at is None:
            self.opened_at = self.clock.now()
            BREAKER_OPENINGS.labels(self.dependency, self.target).inc()
        self._set(State.OPEN)

    def _count(self, *, failed: bool) -> None:
        second = int(self.clock.monotonic())
        while self._buckets and self._buckets[0][0] <= second - self.policy.window:
            self._buckets.popleft()
        if not self._buckets or self._buckets[-1][0] != second:
            self._buckets.append([second, 0, 0])
        self._buckets[-1][1] += 1
        self._buckets[-1][2] += failed

    def _set(self, state: State) -> None:
        self.state = state
        BREAKER_STATE.labels(self.dependency, self.target).set(state.value)

    def describe(self) -> dict[str, str | None]:
        return {
            "state": self.state.name.lower().replace("_", "-"),
            "since": self.opened_at.isoformat() if self.opened_at else None,
        }


class Breakers:
    """This process's breakers, one per (dependency, target), made on first use."""

    def __init__(self) -> None:
        self._all: dict[tuple[str, str], Breaker] = {}
        self._lock = threading.Lock()

    def get(
        self, dependency: str, target: str, policy: Policy = Policy(), clock: Clock = SYSTEM_CLOCK
    ) -> Breaker:
        with self._lock:
            found = self._all.get((dependency, target))
            if found is None:
                found = self._all[(dependency, target)] = Breaker(dependency, target, policy, clock)
            return found

    def report(self) -> dict[str, dict[str, str | None]]:
        """Every breaker that is not closed, for `/readyz`'s body: `{"telegram bot 3": ...}`."""
        with self._lock:
            breakers = list(self._all.values())
        return {
            f"{b.dependency} {b.target}": b.describe()
            for b in breakers
            if b.state is not State.CLOSED
        }


class BreakerOpen(Exception):
    """The call was not made: its breaker is open. `retry_after`: when one may be."""

    def __init__(self, breaker: Breaker, retry_after: float) -> None:
        super().__init__(f"{breaker.dependency} {breaker.target} is failing; not called")
        self.retry_after = retry_after


def answer_failing(response: httpx.Response) -> bool:
    """Whether an HTTP dependency's answer says it is failing: a 5xx. A 4xx, 429 too, is it
    answering (our request was wrong, or it asks for quiet)."""
    return response.status_code >= 500


async def guarded(
    breaker: Breaker,
    send: Callable[[], Awaitable[httpx.Response]],
    failing: Callable[[httpx.Response], bool] = answer_failing,
) -> httpx.Response:
    """`send()` behind `breaker`: `BreakerOpen` without calling while it is open; no answer
    (`httpx.HTTPError`, re-raised) and an answer `failing` says is the dependency failing."""
    wait = breaker.wait()
    if wait:
        raise BreakerOpen(breaker, wait)
    try:
        response = await send()
    except httpx.HTTPError:
        breaker.failed()
        raise
    if failing(response):
        breaker.failed()
    else:
        breaker.succeeded()
    return response
