"""`.data/dev-secrets.json` is its owner's alone from the first byte written."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from simulators.launcher import DEV_SECRETS, dev_secrets

# Runs in a child process with a permissive umask. An audit hook looks at every file in the
# data directory each time the code opens, renames or chmods anything there, so a file that
# was ever readable by others between two steps is seen.
WATCHER = """
import os, stat, sys, json
from pathlib import Path
data = Path(sys.argv[1])
seen = []
def look(event, args):
    watched = ("open", "os.rename", "os.replace", "os.chmod")
    if event in watched and str(args[0]).startswith(str(data)):
        for child in data.iterdir():
            mode = stat.S_IMODE(child.stat().st_mode)
            if mode & 0o077:
                seen.append((child.name, oct(mode), event))
sys.addaudithook(look)
os.umask(0o022)
from simulators.launcher import dev_secrets
dev_secrets(data)
dev_secrets(data)
print(json.dumps(seen))
"""


@pytest.mark.process
def test_dev_secrets__never_readable_by_others(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", WATCHER, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(result.stdout) == []
    path = tmp_path / "dev-secrets.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(json.loads(path.read_text())) == sorted(DEV_SECRETS)


def test_dev_secrets__kept_across_calls(tmp_path: Path) -> None:
    first = dev_secrets(tmp_path)
    assert dev_secrets(tmp_path) == first
    assert len(first["POSTGRES_PASSWORD"]) >= 24
