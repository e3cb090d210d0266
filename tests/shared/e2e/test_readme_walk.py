"""The README's scripted walk, run exactly as printed against a system `make run`'s launcher
brings up, so the commands it shows cannot go stale."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from shared.testing import free_port
from simulators.launcher import CHILDREN
from tests.conftest import HTTP, ROOT
from tests.shared.e2e.test_launcher import launcher_env, start_launcher, wait_all_ready

HEADING = "Walk the demo from a script"


def readme_walk() -> str:
    """The `sh` block of the README's section (the first after its heading, with no other
    heading between)."""
    section = (ROOT / "README.md").read_text().split(f"\n### {HEADING}\n", 1)[1]
    block = re.search(r"^```sh\n(.*?)^```$", section, re.S | re.M)
    assert block is not None, section
    assert not re.search(r"^#", section[: block.start()], re.M), "the block is in another section"
    return block.group(1)


def test_launcher__keeps_its_data_in_the_repositorys_data_folder_as_the_readme_says() -> None:
    from shared.backup import ROOT as BACKUP_ROOT
    from simulators.launcher import REPOSITORY, Launcher

    assert REPOSITORY == ROOT == BACKUP_ROOT
    assert Launcher(REPOSITORY, {}, sys.stdout).data_dir == ROOT / ".data"
    assert "`.data` in the repository's folder" in (ROOT / "README.md").read_text()
    assert "GATEHOUSE_DATA_DIR" not in readme_walk()


def test_readme_walk__the_block_is_the_whole_walk() -> None:
    walk = readme_walk()
    # Each stage of the walk is there, and nothing in it is left for the reader to fill in.
    for step in ('say "/start welcome"', 'press "Pay with Stripe"', 'say "/ads"', "approve"):
        assert step in walk
    assert re.search(r"<[a-z][^>]*>", walk) is None, walk


@pytest.mark.slow(25)
def test_readme_walk__runs_as_printed_and_the_person_ends_in_every_channel_with_a_paid_order(
    tmp_path: Path,
) -> None:
    ports = {child.name: free_port() for child in CHILDREN}
    # tmp_path stands for the repository's folder: the launcher keeps its data in `.data`
    # there, and the walk runs from it.
    env = launcher_env(tmp_path / ".data", ports)
    log = tmp_path / "launcher.log"
    proc = start_launcher(env, log)
    try:
        wait_all_ready(ports, proc, log)
        # The banner points at the walk by the section's name.
        assert f'"{HEADING}"' in log.read_text()
        # As a user runs it: the environment they have, and the ports they moved (a user
        # who moved them set these for `make run`), nothing else of the launcher's.
        user = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "PORT"}}
        user.pop("GATEHOUSE_DATA_DIR", None)
        user.update({child.port_variable: str(ports[child.name]) for child in CHILDREN})
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", readme_walk()],
            env=user,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        # What the bot answered at each stage, in order, as the person reads it (the marks
        # that isolate the owner's words unseen).
        said = done.stdout.translate(dict.fromkeys(range(0x2066, 0x206A)))
        stages = [
            "Welcome in! This is the content behind the gate.",
            "Payment received: your access to Demo paid channel is open.",
            "(Pinned post, 24 hours) is approved.",
            "is paid in full, 10 USDT of 10 USDT",
        ]
        places = [said.find(stage) for stage in stages]
        assert -1 not in places and places == sorted(places), said
        assert "<b>" not in said

        # What the walk left behind, read past the script: the person is in all three
        # channels, and the owner's panel has their payment and their paid order.
        sim = f"http://127.0.0.1:{ports['simtelegram']}/_sim"
        people = HTTP.get(f"{sim}/people").json()
        [person] = [p["id"] for p in people if p["first_name"] == "Script"]
        [bot] = [b["id"] for b in HTTP.get(f"{sim}/bots").json()]
        view = HTTP.get(f"{sim}/view", params={"user_id": person, "bot_id": bot}).json()
        assert {c["title"]: c["status"] for c in view["channels"]} == {
            "Demo paid channel": "member",
            "Demo news": "member",
            "Demo talk": "member",
        }
        panel = f"http://127.0.0.1:{ports['panel-api']}/v1"
        password = re.search(r"password  (\S+)", log.read_text())
        assert password is not None
        login = {"email": "owner@example.com", "password": password.group(1)}
        token = HTTP.post(f"{panel}/auth/login", json=login).json()["access_token"]
        auth = {"authorization": f"Bearer {token}"}
        payments = HTTP.get(f"{panel}/payments", params={"q": person}, headers=auth).json()
        paid = [(p["gateway"], p["amount_minor"], p["currency"]) for p in payments["items"]]
        assert paid == [("stripe", "500", "USD")]
        orders = HTTP.get(f"{panel}/ad-orders", params={"status": "paid"}, headers=auth).json()
        assert [o["paid"] for o in orders["items"] if o["telegram_user_id"] == person] == ["10"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
