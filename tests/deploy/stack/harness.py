"""The pieces of the deploy tests (tests/deploy/stack): a compose project driven as an operator
drives it, the simulated Telegram on this machine, and a trickle of visitors and payments."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

from loadtest.payments import subgate_delivery
from loadtest.threads import Threads
from shared.testing import free_port
from tests.conftest import ROOT, SECRETS

SUBNET = os.environ.get("GATEHOUSE_SUBNET", "172.28.0.0/24")
GATEWAY = SUBNET.rsplit(".", 1)[0] + ".1"
PROXY = SUBNET.rsplit(".", 1)[0] + ".250"
OWNER = {"email": "owner@example.com", "password": "deploy-test-owner-password"}
APPS = ("billing", "botedge-api", "botedge-worker", "panel-api")
# The version this tree builds as (compose.yaml's default, .env.example's value).
CURRENT = "0.2.0-dev"
TIMES: list[tuple[str, float]] = []


@contextmanager
def step(name: str) -> Iterator[None]:
    began = time.monotonic()
    print(f"\ndeploy: {name} ...", flush=True)
    try:
        yield
    finally:
        took = time.monotonic() - began
        TIMES.append((name, took))
        print(f"deploy: {name}: {took:.1f} s", flush=True)


@dataclass
class Compose:
    folder: Path
    project: str
    env: dict[str, str]

    def __call__(
        self, *args: str, check: bool = True, timeout: float = 900, quiet: bool = False
    ) -> subprocess.CompletedProcess[str]:
        argv = ["docker", "compose", "-p", self.project, *args]
        done = subprocess.run(
            argv,
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if not quiet:
            for line in (done.stdout + done.stderr).splitlines()[-15:]:
                print(f"    {line}", flush=True)
        if check and done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
            raise AssertionError(f"{' '.join(argv[4:])} exited {done.returncode}:\n{tail}")
        return done

    def containers(self, service: str | None = None, *, all: bool = False) -> list[dict[str, Any]]:
        args = ["ps", "--format", "json", *(["-a"] if all else []), *([service] if service else [])]
        out = self(*args, quiet=True).stdout.strip()
        if not out:
            return []
        if out.startswith("["):
            return list(json.loads(out))
        return [json.loads(line) for line in out.splitlines()]

    def address(self, service: str) -> str:
        ids = self("ps", "-q", service, quiet=True).stdout.split()
        assert ids, f"{service} is not running"
        inspected = subprocess.run(
            ["docker", "inspect", ids[0]], capture_output=True, text=True, check=True
        )
        networks = json.loads(inspected.stdout)[0]["NetworkSettings"]["Networks"]
        return str(next(iter(networks.values()))["IPAddress"])

    def database_url(self) -> str:
        """The database as the host reaches it: the container's address on its network (compose
        publishes no PostgreSQL port)."""
        password = self.env["POSTGRES_PASSWORD"]
        return f"postgresql://gatehouse:{password}@{self.address('postgres')}:5432/gatehouse"

    def url(self, port_name: str) -> str:
        return f"http://127.0.0.1:{self.env[port_name]}"


def copy_of_the_repository(into: Path) -> Path:
    """The files a clone has (tracked, and new ones not ignored), as a user's folder."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return into


def env_file(folder: Path, settings: dict[str, str]) -> None:
    """.env as an operator makes it: .env.example with its blanks filled in."""
    lines = []
    seen = set()
    for line in (folder / ".env.example").read_text().splitlines():
        name = line.split("=", 1)[0]
        if "=" in line and not line.startswith("#") and name in settings:
            lines.append(f"{name}={settings[name]}")
            seen.add(name)
        else:
            lines.append(line)
    lines += [f"{k}={v}" for k, v in settings.items() if k not in seen]
    (folder / ".env").write_text("\n".join(lines) + "\n")


@dataclass
class Simulator:
    process: subprocess.Popen[bytes]
    url: str  # from this machine
    inside: str  # from the containers


def answers(url: str, **kwargs: Any) -> bool:
    try:
        return httpx.get(url, timeout=3, **kwargs).status_code == 200
    except httpx.HTTPError:
        return False


def wait_until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.25)
    raise AssertionError(f"waited {timeout:g} s for {what}")


def healthy(stack: Compose, services: tuple[str, ...]) -> bool:
    states = {(c["Service"], c.get("Health") or c.get("State")) for c in stack.containers()}
    return all((s, "healthy") in states for s in services)


@dataclass
class Panel:
    url: str
    client: httpx.Client
    bots: list[int] = field(default_factory=list)


def visit(sim: str, bots: list[int], users: list[int]) -> None:
    messages = [
        {"bot_id": bots[user % len(bots)], "user_id": user, "text": "/start promo"}
        for user in users
    ]
    httpx.post(f"{sim}/_sim/messages", json={"messages": messages}, timeout=30).raise_for_status()


def answered(sim: str, users: list[int]) -> Counter[int]:
    sent = httpx.get(f"{sim}/_sim/sent", timeout=60).json()
    wanted = set(users)
    return Counter(int(m["chat_id"]) for m in sent if int(m["chat_id"]) in wanted)


def deliver(billing: str, body: bytes, timeout: float = 180) -> int:
    """As a gateway does: again until a 2xx, whatever came back."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status = httpx.post(f"{billing}/v1/webhooks/payments/subgate", content=body).status_code
            if status < 300:
                return status
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError("billing never took the payment")


class Trickle(Threads):
    """Visitors at 4/s and payments at 2/s, from threads, until stopped."""

    def __init__(
        self,
        compose: Compose,
        sim: str,
        bots: list[int],
        payers: list[tuple[str, int]],
        first_visitor: int,
    ) -> None:
        self.compose = compose
        self.sim = sim
        self.bots = bots
        self.payers = payers
        self.first_visitor = first_visitor
        self.visitors: list[int] = []
        self.paid: list[int] = []
        super().__init__(self._visit, self._pay, join_within=300)

    def _visit(self) -> None:
        user = self.first_visitor
        while not self.stopping.wait(0.25):
            visit(self.sim, self.bots, [user])
            self.visitors.append(user)
            user += 1

    def _pay(self) -> None:
        billing = self.compose.url("BILLING_PORT")
        for order, payer in self.payers:
            if self.stopping.wait(0.5):
                return
            deliver(billing, subgate_delivery(SECRETS["SUBGATE_WEBHOOK_SECRET"], order, order))
            self.paid.append(payer)


# Each membership's state and what was paid for it, in one digest.
LEDGER = (
    "SELECT md5(string_agg(concat_ws('|', m.person_id, m.channel_id, m.status, m.expires_at, p.n),"
    " ',' ORDER BY m.person_id, m.channel_id)) FROM memberships m LEFT JOIN LATERAL"
    " (SELECT count(*) AS n FROM payments"
    " WHERE payments.person_id = m.person_id AND payments.channel_id = m.channel_id) p ON true"
)


def ledger(compose: Compose) -> tuple[str, int, int]:
    with psycopg.connect(compose.database_url()) as conn:
        row = conn.execute(
            f"SELECT ({LEDGER}), (SELECT count(*) FROM payments), (SELECT count(*) FROM people)"
        ).fetchone()
    assert row is not None
    return str(row[0]), int(row[1]), int(row[2])


def settings_for(telegram: Simulator) -> dict[str, str]:
    """What an operator puts in .env, with free host ports and the simulated Telegram."""
    return {
        **{k: v for k, v in SECRETS.items() if not k.startswith(("WAYFORPAY", "STRIPE"))},
        "POSTGRES_PASSWORD": secrets.token_urlsafe(18),
        "BILLING_PORT": str(free_port()),
        "BOTEDGE_PORT": str(free_port()),
        "PANEL_PORT": str(free_port()),
        "HTTP_PORT": str(free_port()),
        "HTTPS_PORT": str(free_port()),
        "PUBLIC_BASE_URL": "",
        "TELEGRAM_API_BASE": telegram.inside,
        "TRUSTED_PROXIES": PROXY,
        "GATEHOUSE_SUBNET": SUBNET,
        "GATEHOUSE_PROXY_ADDRESS": PROXY,
        "GATEHOUSE_DOMAIN": "localhost",
        "GATEHOUSE_VERSION": CURRENT,
    }


def sign_in(compose: Compose, panel: Panel) -> None:
    """The owner made with the setup code panel-api printed, and signed in."""
    logs = compose("logs", "panel-api", quiet=True).stdout
    codes = re.findall(r"the setup code is (\S+)", logs)
    assert codes, "panel-api printed no setup code"
    made = panel.client.post(f"{panel.url}/v1/setup", json={"code": codes[-1], **OWNER})
    assert made.status_code == 201, made.text
    signed_in = panel.client.post(f"{panel.url}/v1/auth/login", json=OWNER)
    assert signed_in.status_code == 200, signed_in.text
    panel.client.headers["Authorization"] = f"Bearer {signed_in.json()['access_token']}"
