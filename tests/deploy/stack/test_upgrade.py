"""An upgrade as docs/upgrading.md has it, from the previous release (v0.1.0) to this tree, and
its rollback, under a trickle of visitors and payments (`make test-deploy`).

The previous release's stack is brought up from its own files (`git archive` of its commit) and
used; then, with the trickle running: this tree's image is built, its migrations run while the
previous release's services keep serving, the services move to the new image one at a time,
and then back to the previous image one at a time (the rollback, on the migrated data). Every
visitor is answered once, every payment applied once and its invite sent once.
"""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from loadtest.payments import set_up_payers
from loadtest.updates import set_up_at
from tests.conftest import ROOT
from tests.deploy.stack.harness import (
    APPS,
    CURRENT,
    Compose,
    Panel,
    Simulator,
    Trickle,
    answered,
    copy_of_the_repository,
    env_file,
    healthy,
    settings_for,
    sign_in,
    step,
    wait_until,
)

PROJECT = "gatehouse-upgrade"
PREVIOUS = "0.1.0"
PREVIOUS_COMMIT = "46b3c29c640057f20d49070e72fb9d8aa3bc5521"  # tagged v0.1.0
FIRST_BOT = 7_400_000
FIRST_VISITOR = 5_100_000
FIRST_PAYER = 6_100_000
ONE_BY_ONE = (*APPS, "sweep", "prune")
pytestmark = pytest.mark.timeout(1800)


def _release(commit: str, into: Path) -> Path:
    """A release's files, as its tag's archive has them."""
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=False)
    assert archive.returncode == 0, (
        f"git archive {commit}: the upgrade test needs the repository's history (a full clone):"
        f" {archive.stderr.decode()[-300:]}"
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def _images(stack: Compose) -> dict[str, set[str]]:
    """Each service's containers' image names."""
    seen: dict[str, set[str]] = {}
    for container in stack.containers():
        seen.setdefault(container["Service"], set()).add(container["Image"])
    return seen


@pytest.fixture
def stacks(tmp_path: Path, telegram: Simulator) -> Iterator[tuple[Compose, Compose]]:
    settings = settings_for(telegram)
    old_settings = {**settings, "GATEHOUSE_VERSION": PREVIOUS}
    new_settings = {**settings, "GATEHOUSE_VERSION": CURRENT}
    old_folder = _release(PREVIOUS_COMMIT, tmp_path / "previous")
    new_folder = copy_of_the_repository(tmp_path / "current")
    env_file(old_folder, old_settings)
    env_file(new_folder, new_settings)
    # One project, as an operator's one folder moved from the old release to the new.
    old = Compose(old_folder, PROJECT, old_settings)
    new = Compose(new_folder, PROJECT, new_settings)
    old("down", "-v", "--remove-orphans", quiet=True, check=False)
    yield old, new
    new("down", "-v", "--remove-orphans", quiet=True, check=False)


def test_upgrade_then_rollback_one_service_at_a_time_under_a_trickle_lose_nothing(
    stacks: tuple[Compose, Compose], telegram: Simulator
) -> None:
    old, new = stacks
    with step(f"the previous release ({PREVIOUS}) built and up"):
        old("build")
        old("up", "-d", "--wait")
    with httpx.Client(timeout=60) as client:
        panel = Panel(old.url("PANEL_PORT"), client)
        sign_in(old, panel)
        bots = [FIRST_BOT, FIRST_BOT + 1]
        set_up_at(telegram.url, panel.url, panel.client, bots, "polling")
    payers = set_up_payers(old.database_url(), 600, FIRST_PAYER, "upgrade")
    with Trickle(new, telegram.url, bots, payers, FIRST_VISITOR) as trickle:
        with step(f"this tree's image ({CURRENT}) built, the previous one serving"):
            new("build")
        with step("the new migrations, the previous release's services running"):
            new("run", "--rm", "-T", "migrate")
            served = len(trickle.visitors)
            wait_until(lambda: len(trickle.visitors) > served + 8, 60, "the trickle going on")
            assert healthy(old, ("postgres", *APPS))
        for service in ONE_BY_ONE:
            with step(f"{service} moved to {CURRENT}"):
                new("up", "-d", "--no-deps", "--wait", service)
        images = _images(new)
        assert all(images[s] == {f"gatehouse:{CURRENT}"} for s in ONE_BY_ONE), images
        for service in ONE_BY_ONE:
            with step(f"{service} rolled back to {PREVIOUS}"):
                old("up", "-d", "--no-deps", "--wait", service)
        images = _images(old)
        assert all(images[s] == {f"gatehouse:{PREVIOUS}"} for s in ONE_BY_ONE), images
    visitors, paid = trickle.visitors, trickle.paid
    with step("everything offered answered"):
        wait_until(lambda: len(answered(telegram.url, visitors)) == len(visitors), 180, "visitors")
        wait_until(lambda: len(answered(telegram.url, paid)) == len(paid), 180, "invites")
    print(f"    {len(visitors)} visitors, {len(paid)} payments through the upgrade and rollback")
    assert len(visitors) > 40 and len(paid) > 20
    assert set(answered(telegram.url, visitors).values()) == {1}
    assert set(answered(telegram.url, paid).values()) == {1}
    with psycopg.connect(old.database_url()) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT external_payment_id) FROM payments"
            " WHERE external_payment_id LIKE 'upgrade%%'"
        ).fetchone()
        migrations = conn.execute("SELECT count(*) FROM schema_migrations").fetchone()
    assert row == (len(paid), len(paid))
    assert migrations == (len(list((ROOT / "migrations").glob("*.sql"))),)
    print(f"    migrations applied: {json.dumps(migrations[0] if migrations else None)}")
