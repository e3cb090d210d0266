"""A bot edge as real processes: the simulated Telegram, the webhook API, workers."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg
import pytest

from shared.tls import verified
from tests.billing.e2e import gateways
from tests.botedge.conftest import insert_bot
from tests.conftest import (
    HTTP,
    Serve,
    Served,
    ServiceProcess,
    serve_billing,
    serve_simtelegram,
    service_env,
    wait_until,
)

FAST = {
    # Limits and retries scaled for a test run; the limiter itself has its own tests.
    "SEND_RATE": "2000",
    "SEND_PRIVATE_RATE": "200",
    "SEND_LANES": "16",
    "WORKER_POLL_INTERVAL": "0.2",
    "WORKER_RETRY_BASE": "0.1",
    "TELEGRAM_POLL_TIMEOUT": "2",
}


@dataclass
class Edge:
    database_url: str
    start: Callable[..., ServiceProcess]
    sim: Served | ServiceProcess
    extra_env: dict[str, str]
    api: ServiceProcess | None = None
    workers: list[ServiceProcess] = field(default_factory=list)
    conn: psycopg.Connection[Any] | None = None

    def env(self, **overrides: str) -> dict[str, str]:
        return service_env(
            self.database_url,
            TELEGRAM_API_BASE=self.sim.url,
            **{**FAST, **self.extra_env, **overrides},
        )

    def start_api(self, port: int | None = None, **overrides: str) -> ServiceProcess:
        self.api = self.start("botedge", "--role", "api", env=self.env(**overrides), port=port)
        return self.api

    def start_worker(self, **overrides: str) -> ServiceProcess:
        worker = self.start("botedge", "--role", "worker", env=self.env(**overrides))
        self.workers.append(worker)
        return worker

    def sim_get(self, path: str, **params: Any) -> Any:
        return HTTP.get(f"{self.sim.url}{path}", params=params, timeout=10).json()

    def sim_post(self, path: str, body: Any) -> Any:
        response = HTTP.post(f"{self.sim.url}{path}", json=body, timeout=10)
        assert response.status_code == 200, response.text
        return response.json()

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """The rows, each statement its own transaction on one kept connection (a test polls
        through here every 50 ms: a connection each time cost PostgreSQL a process each time);
        opened again once if PostgreSQL went away (a test restarts it)."""
        for attempt in (1, 2):
            if self.conn is None or self.conn.closed:
                self.conn = psycopg.connect(self.database_url, autocommit=True)
            try:
                return self.conn.execute(sql, args).fetchall()  # type: ignore[arg-type]
            except psycopg.OperationalError:
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def wait_until(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        wait_until(check, timeout, what)

    def wait_for_sender(self, bot_id: int) -> str:
        """Wait until some worker holds the bot's send lease; the holder."""
        lease = f"send:{bot_id}"
        self.wait_until(
            lambda: bool(self.query("SELECT 1 FROM leases WHERE name = %s", lease)), 15, lease
        )
        return str(self.query("SELECT holder FROM leases WHERE name = %s", lease)[0][0])

    def bots_served(self, worker: ServiceProcess) -> float:
        """The worker's own count of the bots it serves (it drops a bot whose token died)."""
        text = HTTP.get(f"{worker.url}/metrics", timeout=10).text
        match = re.search(r"^botedge_bots_served ([0-9.e+]+)$", text, re.MULTILINE)
        return float(match.group(1)) if match else -1.0

    def add_bot(self, telegram_bot_id: int, mode: str = "webhook") -> tuple[int, str, str]:
        bot_id, token, secret = insert_bot(self.database_url, telegram_bot_id, mode)
        self.sim_post("/_sim/bots", {"token": token})
        return bot_id, token, secret


@pytest.fixture
def edge(
    start_service: Callable[..., ServiceProcess], serve: Serve, database_url: str
) -> Iterator[Edge]:
    """The simulated Telegram in a thread of the test; botedge's processes as each test starts
    them."""
    sim = serve_simtelegram(serve, SIM_ENFORCE_LIMITS="false")
    edge = Edge(database_url, start_service, sim, {})
    yield edge
    edge.close()


# -- a paid channel with billing behind it (access, admission) ----------------------------------

PAID = -1001000000401
MANAGER = 5550401
PAYER = 7001
# Short claims and leases: a killed worker's are taken over within seconds.
FAST_ACCESS = {"ACCESS_RETRY_BASE": "0.1", "WORKER_LOCK_SECONDS": "3", "LEASE_SECONDS": "9"}


@dataclass
class Shop:
    edge: Edge
    billing: Served
    channel: int
    bot_id: int
    token: str

    def pay(self, user: int, payment_id: str) -> None:
        with httpx.Client(verify=verified()) as client:
            order = gateways.create_invoice(client, self.billing.url, user, self.channel, "subgate")
            paid = gateways.subgate(order["order_reference"], payment_id, "12.50")
            assert paid.send(client, self.billing.url).json()["applied"] is True

    def sweep(self) -> dict[str, Any]:
        answer = HTTP.post(f"{self.billing.url}/v1/sweep", headers=gateways.sweep_request())
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def events(self) -> list[tuple[str, str]]:
        return [
            (str(kind), str(state))
            for kind, state in self.edge.query("SELECT kind, state FROM access_events ORDER BY id")
        ]

    def sent(self, user: int) -> list[dict[str, Any]]:
        return list(self.edge.sim_get("/_sim/sent", chat_id=user))

    def calls(self, method: str) -> list[dict[str, Any]]:
        return [c for c in self.edge.sim_get("/_sim/calls", method=method) if c["status"] == 200]


@pytest.fixture
def shop(edge: Edge, serve: Serve, database_url: str) -> Shop:
    billing = serve_billing(serve, database_url)
    bot_id, token, _ = edge.add_bot(MANAGER, mode="polling")
    channel = gateways.add_paid_channel(database_url, chat_id=PAID, grace_days=2)
    edge.query("UPDATE channels SET manager_bot_id = %s RETURNING id", bot_id)
    edge.sim_post(
        "/_sim/chats", {"id": PAID, "type": "channel", "title": "Paid", "admin_bots": [MANAGER]}
    )
    return Shop(edge, billing, channel, bot_id, token)
