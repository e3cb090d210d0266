"""docs/reliability.md as `make faults` writes it: the runs' figures and the scaled tests'."""

from __future__ import annotations

import json
from pathlib import Path

from loadtest.faults import Outcome, write


def test_document__each_run_and_each_test_record_with_its_figures_and_command(
    tmp_path: Path,
) -> None:
    held = Outcome("kill", "SIGKILL each process in turn", "every 3 s", "40 visitors/s")
    held.figure("lost (never answered)", 0)
    broken = Outcome("postgres", "PostgreSQL stopped", "10 s", "40 visitors/s")
    broken.figure("processes restarted", 1, ok=False)
    records = tmp_path / "records"
    records.mkdir()
    (records / "test_x.json").write_text(
        json.dumps(
            {
                "title": "TronGrid down",
                "fault": "503 for 300 s",
                "load": "10 hashes",
                "command": "GATEHOUSE_FULL_SCALE=1 python -m pytest 'tests/x.py::test_x'",
                "figures": {"claims credited after": "10, once each"},
            }
        )
    )
    path = tmp_path / "reliability.md"

    write([held, broken], records, path, "python -m loadtest.faults --write x")

    text = path.read_text()
    assert text.startswith("# Reliability")
    assert "Written by `python -m loadtest.faults --write x`" in text
    kill = text[text.index("## SIGKILL each") : text.index("## PostgreSQL")]
    assert "- Command: `python -m loadtest.faults kill`" in kill
    assert "- Held: yes" in kill
    assert "| lost (never answered) | 0 |" in kill
    postgres = text[text.index("## PostgreSQL") : text.index("## TronGrid")]
    assert "- Held: NO" in postgres
    assert "| processes restarted | 1 |" in postgres
    tron = text[text.index("## TronGrid down") :]
    assert "`GATEHOUSE_FULL_SCALE=1 python -m pytest 'tests/x.py::test_x'`" in tron
    assert "| claims credited after | 10, once each |" in tron
