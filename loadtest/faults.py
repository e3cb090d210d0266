"""`python -m loadtest.faults [run ...]`: faults done to the whole system under load, counted.

    make faults                                  # the scaled tests at full size, then these
    python -m loadtest.faults kill --seconds 30  # one run, shorter, printed only

Each run starts everything from nothing as its own processes (a throwaway PostgreSQL, the
simulated Telegram, billing, botedge's api and two workers, panel-api) and puts three loads on
it at once: visitors opening a gated link (every one must get exactly one answer), a payment
gateway delivering each payment twice and retrying until it gets a 2xx (every payment must be
applied once and bring one invite message), and an owner reading the panel. It does the fault,
waits until everything offered is answered, and counts what was lost, what came twice, every
5xx our services answered, and how long recovery took. It exits 1 when anything was lost, a
payment was applied twice, or a service answered a 5xx outside the fault.

`--write docs/reliability.md` writes the figures down, with those the scaled tests of
`make faults` left in `--records` (tests.conftest's `written_down`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import signal
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

from loadtest import updates
from loadtest.fault_report import Outcome, summary, write, write_readme
from loadtest.payments import set_up_payers, subgate_delivery
from loadtest.stack import OWNER_EMAIL, OWNER_PASSWORD, Stack, machine_now, stack
from loadtest.threads import Threads

ROOT = Path(__file__).resolve().parents[1]
SUBGATE_SECRET = "faults-subgate-secret-0000000000"  # noqa: S105 - a throwaway database
FIRST_VISITOR = 3_000_000
FIRST_PAYER = 4_000_000
BOTS = 5


@dataclass(frozen=True)
class Options:
    rate: float = 40.0
    seconds: float = 60.0
    payments: int = 600


# -- the loads beside the visitors ------------------------------------------------------------


@dataclass
class Answers:
    """What one kind of caller got: by status class, and refused connections."""

    counts: Counter[str] = field(default_factory=Counter)
    server_errors: list[tuple[float, int]] = field(default_factory=list)

    def saw(self, status: int) -> None:
        self.counts[f"{status // 100}xx"] += 1
        if status >= 500:
            self.server_errors.append((time.time(), status))

    def line(self) -> str:
        parts = [f"{self.counts[k]} {k}" for k in sorted(self.counts)]
        return ", ".join(parts) or "none"


class Background(Threads):
    """Threads that load billing and panel-api while the visitors come, stopped on leaving."""

    def __init__(self, running: Stack, payers: list[tuple[str, int]], rate: float) -> None:
        self.running = running
        self.payers = payers
        self.rate = rate
        self.gateway = Answers()
        self.panel = Answers()
        super().__init__(self._pay, self._read_panel, join_within=120)

    def finish_payments(self, timeout: float) -> None:
        self.threads[0].join(timeout=timeout)

    def _deliver(self, client: httpx.Client, body: bytes) -> None:
        """As a gateway does: again until a 2xx, whatever came back."""
        url = f"{self.running.get('billing').url}/v1/webhooks/payments/subgate"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                answer = client.post(url, content=body)
            except httpx.TransportError:
                self.gateway.counts["refused"] += 1
            else:
                self.gateway.saw(answer.status_code)
                if answer.is_success:
                    return
            time.sleep(0.2)
        raise SystemExit("a payment was not accepted in 300 s")

    def _pay(self) -> None:
        """Each payment delivered, then delivered again (a redelivery), at `rate` a second."""
        began = time.monotonic()
        with httpx.Client(timeout=10, headers={"content-type": "application/json"}) as client:
            for n, (order, _) in enumerate(self.payers):
                wait = began + n / self.rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                body = subgate_delivery(SUBGATE_SECRET, order, f"fault-{n}")
                self._deliver(client, body)
                self._deliver(client, body)

    def _read_panel(self) -> None:
        with httpx.Client(timeout=10) as client:
            token = ""
            while not self.stopping.is_set():
                url = self.running.get("panel-api").url
                try:
                    if not token:
                        signed_in = client.post(
                            f"{url}/v1/auth/login",
                            json={"email": OWNER_EMAIL, "password": OWNER_PASSWORD},
                        )
                        self.panel.saw(signed_in.status_code)
                        token = signed_in.json().get("access_token", "")
                    else:
                        read = client.get(
                            f"{url}/v1/dashboard", headers={"Authorization": f"Bearer {token}"}
                        )
                        self.panel.saw(read.status_code)
                except httpx.TransportError:
                    self.panel.counts["refused"] += 1
                self.stopping.wait(0.1)


# -- one run ----------------------------------------------------------------------------------


@dataclass
class Run:
    running: Stack
    bots: list[int]
    payers: list[tuple[str, int]]
    background: Background
    began: float = 0.0


@contextmanager
def _system(options: Options, **sim: str) -> Iterator[Run]:
    with stack(
        workers=2,
        telegram_ms=5,
        billing=True,
        sim_env=sim,
        env={"SUBGATE_WEBHOOK_SECRET": SUBGATE_SECRET, "LOG_LEVEL": "WARNING"},
    ) as running:
        bots = updates.set_up(running, BOTS)
        payers = set_up_payers(running.database_url, options.payments, FIRST_PAYER, "fault")
        rate = options.payments / options.seconds
        with Background(running, payers, rate) as background:
            yield Run(running, bots, payers, background)


def _offer(run: Run, options: Options, fault: Callable[[], None]) -> list[updates.Offer]:
    """The visitors at `rate` for `seconds`, with `fault` running beside them from the start."""
    done = threading.Event()
    failed: list[BaseException] = []

    def faulting() -> None:
        try:
            fault()
        except BaseException as error:
            failed.append(error)
        finally:
            done.set()

    thread = threading.Thread(target=faulting, daemon=True)
    run.began = time.time()
    thread.start()
    offers = updates.offer(
        run.running.get("telegram").url,
        run.bots,
        [(options.rate, options.seconds)],
        FIRST_VISITOR,
    )
    thread.join(timeout=600)
    if failed:
        raise failed[0]
    return offers


def _count(run: Run, outcome: Outcome, offers: list[updates.Offer], fault_ended: float) -> None:
    """Wait for everything offered to be answered, then the figures every run shows."""
    running = run.running
    run.background.finish_payments(600)
    updates.wait_answered(running, {o.user for o in offers}, 600)
    _wait_invites(running, len(run.payers), 120)
    run.background.stopping.set()
    collected = updates.collect(running, offers)
    found = updates.summarize(collected)
    late = [
        min(u.answers) - fault_ended for u in collected if u.answers and u.offer.at <= fault_ended
    ]
    outcome.figure("visitors offered", found.offered)
    outcome.figure("answered once", found.answered_once)
    outcome.figure("lost (never answered)", found.unanswered, found.unanswered == 0)
    outcome.figure("answered twice", found.answered_twice)
    outcome.figure(
        "answer p50 / p99 / max",
        f"{found.latency.p50:.2f} / {found.latency.p99:.2f} / {found.latency.max:.2f} s",
    )
    outcome.figure("recovered (last answer after the fault ended)", f"{max([0.0, *late]):.1f} s")
    outcome.figure("where the slowest waited", updates.bottleneck(found))
    applied, invited, twice = _payments(running, run.payers)
    outcome.figure("payments delivered (each twice)", len(run.payers))
    outcome.figure("payments applied", applied, applied == len(run.payers))
    outcome.figure("payers sent their invite", invited, invited == len(run.payers))
    outcome.figure("payers sent it twice", twice)
    outcome.figure("gateway got", run.background.gateway.line())
    outcome.figure("panel reads got", run.background.panel.line())


def _wait_invites(running: Stack, count: int, timeout: float) -> None:
    updates.wait_counted(
        running,
        "SELECT count(*) FILTER (WHERE state = 'done'),"
        " (SELECT count(*) FROM outbox WHERE state = 'pending')"
        " FROM access_events WHERE kind = 'grant'",
        (),
        count,
        timeout,
    )


def _payments(running: Stack, payers: list[tuple[str, int]]) -> tuple[int, int, int]:
    """Payments applied; payers Telegram delivered an invite message to, and how many of them
    got more than one."""
    with psycopg.connect(running.database_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM payments WHERE external_payment_id LIKE 'fault-%%'"
        ).fetchone()
    applied = int(row[0]) if row else 0
    people = {user for _, user in payers}
    sent = httpx.get(f"{running.get('telegram').url}/_sim/sent", timeout=60).json()
    per_person = Counter(int(m["chat_id"]) for m in sent if int(m["chat_id"]) in people)
    return applied, len(per_person), sum(1 for n in per_person.values() if n > 1)


def _five_hundreds(run: Run, windows: list[tuple[float, float]]) -> int:
    """5xx answered outside the windows in which the fault itself was in force."""
    errors = run.background.gateway.server_errors + run.background.panel.server_errors
    return sum(1 for at, _ in errors if not any(a <= at <= b for a, b in windows))


def _sending_for(run: Run, pid: int) -> list[int]:
    """The Telegram ids of the bots whose send lease the worker with this pid holds."""
    with psycopg.connect(run.running.database_url) as conn:
        rows = conn.execute(
            "SELECT b.telegram_bot_id FROM leases l"
            " JOIN bots b ON l.name = 'send:' || b.id"
            " WHERE l.holder LIKE %s AND l.expires_at > now()",
            (f"%:{pid}:%",),
        ).fetchall()
    return [int(row[0]) for row in rows]


def _failovers(run: Run, kills: list[tuple[float, int, list[int]]]) -> list[float]:
    """For each worker killed while sending: seconds from the kill to the first send for one
    of its bots by another process (a send begun after the kill, as Telegram saw it)."""
    calls = httpx.get(
        f"{run.running.get('telegram').url}/_sim/calls",
        params={"method": "sendMessage"},
        timeout=60,
    ).json()
    waits = []
    for killed_at, pid, bots in kills:
        begun = [
            c["started"]
            for c in calls
            if c["bot_id"] in bots
            and c["started"] >= killed_at
            and c["user_agent"] != f"gatehouse-botedge/{pid}"
        ]
        if begun:
            waits.append(min(begun) - killed_at)
    return waits


# -- the runs -------------------------------------------------------------------------------


KILLED = ("botedge-api", "worker-1", "worker-2", "billing", "panel-api")


def kill(options: Options) -> Outcome:
    every = 3.0
    outcome = Outcome(
        "kill",
        "SIGKILL each process in turn",
        f"every {every:g} s one of {', '.join(KILLED)} is SIGKILLed and started again at once",
        "",
    )
    kills: Counter[str] = Counter()
    down: list[float] = []
    # Each worker's kill: when, its pid, and the bots it sent for then.
    worker_kills: list[tuple[float, int, list[int]]] = []
    with _system(options) as run:
        outcome.load = _load_line(options, run)

        def fault() -> None:
            n = 0
            while time.time() < run.began + options.seconds - every:
                time.sleep(max(0.0, run.began + (n + 1) * every - time.time()))
                process = run.running.get(KILLED[n % len(KILLED)])
                held = _sending_for(run, process.proc.pid) if "worker" in process.name else []
                process.proc.send_signal(signal.SIGKILL)
                killed = time.time()
                if held:
                    worker_kills.append((killed, process.proc.pid, held))
                run.running.relaunch(process)
                down.append(time.time() - killed)
                kills[process.name] += 1
                n += 1

        offers = _offer(run, options, fault)
        _count(run, outcome, offers, run.began + options.seconds)
        handed = _failovers(run, worker_kills)
    outcome.figure("kills", ", ".join(f"{name} {n}" for name, n in sorted(kills.items())))
    outcome.figure(
        "from a worker's SIGKILL to its bots' next send by another worker (target ≤ 3 s)",
        f"max {max(handed, default=0):.2f} s, median {statistics.median(handed or [0]):.2f} s"
        f" over {len(handed)} kills of a worker that was sending",
        max(handed, default=0) <= 3.0,
    )
    outcome.figure("down per kill (to healthy again)", f"max {max(down, default=0):.1f} s")
    outcome.notes += [
        "A 5xx here is an answer from a process, never a refused connection: while a process "
        "is down its callers are refused and retry.",
        "A killed worker's send and poll leases go to another worker once its presence "
        "(PRESENCE_SECONDS = 1.5 s) has run out, and its updates in hand are claimable then. "
        "A visitor answered twice is the documented window: a worker killed after Telegram "
        "took a message and before its answer was recorded.",
    ]
    _no_5xx(run, outcome, [])
    return outcome


def postgres(options: Options) -> Outcome:
    stopped_for = 10.0
    outcome = Outcome(
        "postgres",
        "PostgreSQL stopped and started again",
        f"PostgreSQL stopped (fast shutdown) {options.seconds / 3:.0f} s into the load, started "
        f"again {stopped_for:g} s later; no service restarted",
        "",
    )
    ready: dict[str, list[tuple[float, int]]] = {}
    window: list[float] = []
    with _system(options) as run:
        outcome.load = _load_line(options, run)
        pg = run.running.pg
        assert pg is not None  # noqa: S101 - the stack starts its own
        pids = {p.name: p.proc.pid for p in run.running.processes}
        watching = threading.Event()
        watcher = threading.Thread(
            target=_watch_ready, args=(run.running, ready, watching), daemon=True
        )
        watcher.start()

        def fault() -> None:
            time.sleep(options.seconds / 3)
            window.append(time.time())
            pg.stop()
            time.sleep(stopped_for)
            pg.start()
            window.append(time.time())

        offers = _offer(run, options, fault)
        _count(run, outcome, offers, window[1])
        watching.set()
        watcher.join(timeout=10)
        restarted = [p.name for p in run.running.processes if p.proc.pid != pids[p.name]]
    outcome.figure("processes restarted", len(restarted), not restarted)
    for name, seen in sorted(ready.items()):
        not_ready = [at for at, status in seen if status == 503 and at >= window[0]]
        back = [at for at, status in seen if status == 200 and not_ready and at > not_ready[0]]
        outcome.figure(
            f"{name} /readyz",
            f"503 {not_ready[0] - window[0]:.1f} s after the stop, 200 "
            f"{back[0] - window[1]:.1f} s after the start"
            if not_ready and back
            else "never 503"
            if not not_ready
            else "not 200 again",
            bool(not_ready and back),
        )
    _no_5xx(run, outcome, [(window[0], window[1] + 5)])
    outcome.notes.append(
        "While PostgreSQL is down billing answers the gateway 503 (it retries) and panel-api "
        "answers 503 `database-unavailable`; those are counted above and are the fault's."
    )
    return outcome


def _watch_ready(
    running: Stack, seen: dict[str, list[tuple[float, int]]], stopping: threading.Event
) -> None:
    # Longer than /readyz's own 2 s wait for a pool connection: a process whose pool has
    # nothing left answers 503 after it, and a watcher that gave up at 2 s would miss it.
    with httpx.Client(timeout=5) as client:
        while not stopping.is_set():
            for process in running.processes:
                if process.name == "telegram":
                    continue
                try:
                    status = client.get(f"{process.url}/readyz").status_code
                except httpx.TransportError:
                    status = 0
                if status != 404:
                    seen.setdefault(process.name, []).append((time.time(), status))
            stopping.wait(0.1)


def telegram(options: Options) -> Outcome:
    rates = {"rate_429": 0.05, "rate_5xx": 0.05, "rate_non_json": 0.05, "rate_timeout": 0.05}
    outcome = Outcome(
        "telegram",
        "Telegram failing one call in five",
        "every Bot API call: 5% 429 (retry_after 1), 5% 502, 5% a 200 that is not JSON, 5% "
        "no answer for 15 s then 504; from the load's start to its end",
        "",
    )
    with _system(options) as run:
        outcome.load = _load_line(options, run)
        faults = f"{run.running.get('telegram').url}/_sim/faults"

        def fault() -> None:
            httpx.post(faults, json={**rates, "timeout_seconds": 15}).raise_for_status()
            time.sleep(max(0.0, run.began + options.seconds - time.time()))
            httpx.post(faults, json=dict.fromkeys(rates, 0.0)).raise_for_status()

        offers = _offer(run, options, fault)
        _count(run, outcome, offers, run.began + options.seconds)
        calls = httpx.get(f"{run.running.get('telegram').url}/_sim/calls", timeout=60).json()
    outcome.notes.append(
        "A call that gets no answer holds its update's worker slot until the Bot API client "
        "gives up on it, and the gate asks two per visitor: most of the wait is in the inbox. "
        "The 200s that are not JSON are counted as answered by the simulator's log."
    )
    statuses = Counter(int(c["status"]) for c in calls)
    outcome.figure(
        "Bot API calls / answered with an error status",
        f"{len(calls)} / {sum(n for s, n in statuses.items() if s != 200)}"
        f" ({', '.join(f'{n} answered {s}' for s, n in sorted(statuses.items()) if s != 200)})",
    )
    _no_5xx(run, outcome, [])
    return outcome


SIGNALLED = ("billing", "botedge-api", "worker-1", "panel-api")
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def signals(options: Options) -> Outcome:
    every = options.seconds / (len(SIGNALLED) * len(SIGNALS) + 1)
    outcome = Outcome(
        "signals",
        "SIGTERM, SIGINT and SIGHUP to each service",
        f"every {every:.0f} s one of {', '.join(SIGNALLED)} gets one of SIGTERM, SIGINT, "
        "SIGHUP (each pair once), drains, exits, and is started again",
        "",
    )
    exits: list[tuple[str, str, int, float]] = []
    with _system(options) as run:
        outcome.load = _load_line(options, run)

        def fault() -> None:
            pairs = [(name, sig) for sig in SIGNALS for name in SIGNALLED]
            for n, (name, sig) in enumerate(pairs):
                time.sleep(max(0.0, run.began + (n + 1) * every - time.time()))
                process = run.running.get(name)
                sent = time.time()
                process.proc.send_signal(sig)
                code = process.proc.wait(timeout=60)
                exits.append((name, sig.name, code, time.time() - sent))
                run.running.relaunch(process)

        offers = _offer(run, options, fault)
        _count(run, outcome, offers, run.began + options.seconds)
    unclean = [f"{name} {sig} exited {code}" for name, sig, code, _ in exits if code != 0]
    outcome.figure("signals sent", len(exits), len(exits) == len(SIGNALLED) * len(SIGNALS))
    outcome.figure("exited 0", len(exits) - len(unclean), not unclean)
    outcome.figure("longest drain", f"{max((e[3] for e in exits), default=0):.1f} s")
    _no_5xx(run, outcome, [])
    return outcome


def _no_5xx(run: Run, outcome: Outcome, windows: list[tuple[float, float]]) -> None:
    outside = _five_hundreds(run, windows)
    outcome.figure("5xx outside the fault", outside, outside == 0)


def _load_line(options: Options, run: Run) -> str:
    return (
        f"{options.rate:g} visitors/s opening a gated link over {len(run.bots)} bots for "
        f"{options.seconds:g} s; {len(run.payers)} payments at "
        f"{len(run.payers) / options.seconds:g}/s, each delivered twice; the owner's dashboard "
        "read 10 times a second"
    )


RUNS: dict[str, Callable[[Options], Outcome]] = {
    "kill": kill,
    "postgres": postgres,
    "telegram": telegram,
    "signals": signals,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.faults", description=__doc__)
    parser.add_argument("runs", nargs="*", choices=[[], *RUNS], default=[])
    parser.add_argument("--rate", type=float, default=Options.rate)
    parser.add_argument("--seconds", type=float, default=Options.seconds)
    parser.add_argument("--payments", type=int, default=Options.payments)
    parser.add_argument("--records", type=Path, help="the scaled tests' figures")
    parser.add_argument("--write", type=Path, help="where to write the document")
    parser.add_argument("--readme", type=Path, help="the README whose fault table to rewrite")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    options = Options(rate=args.rate, seconds=args.seconds, payments=args.payments)
    outcomes = []
    for name in args.runs or list(RUNS):
        started = time.monotonic()
        # The machine's speed beside every figure: it drifts by half within a day.
        speed = machine_now().describe()
        print(f"{name} ... ({speed})", flush=True)
        outcome = RUNS[name](options)
        outcome.figures.insert(0, ("the machine at the start", speed))
        print(f"{name}: {'held' if outcome.ok else 'FAILED'} in {time.monotonic() - started:.0f} s")
        for what, value in outcome.figures:
            print(f"  {what}: {value}")
        outcomes.append(outcome)
    if args.write:
        shown = " ".join(argv if argv is not None else sys.argv[1:])
        write(outcomes, args.records, args.write, f"python -m loadtest.faults {shown}".strip())
        print(f"written: {args.write}")
    if args.readme:
        write_readme(args.readme, summary(outcomes, args.records, dt.datetime.now(dt.UTC)))
        print(f"written: the fault table of {args.readme}")
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
