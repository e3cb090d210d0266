"""docs/reliability.md as `make faults` writes it: the runs' figures and the scaled tests'."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from loadtest.fault_report import README_BEGIN, README_END, Outcome, summary, write, write_readme


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


def test_readme__its_fault_table_is_rewritten_from_the_same_run_and_the_rest_kept(
    tmp_path: Path,
) -> None:
    kill = Outcome("kill", "SIGKILL each process in turn", "every 3 s", "40 visitors/s")
    for what, value in (
        ("visitors offered", 2400),
        ("lost (never answered)", 0),
        ("answered twice", 1),
        ("answer p50 / p99 / max", "2.10 / 6.52 / 7.80 s"),
        ("recovered (last answer after the fault ended)", "2.9 s"),
        ("payments delivered (each twice)", 600),
        ("payments applied", 600),
        ("payers sent it twice", 0),
        ("5xx outside the fault", 0),
    ):
        kill.figure(what, value)
    readme = tmp_path / "README.md"
    readme.write_text(f"# Gatehouse\n\nbefore\n{README_BEGIN}\nan old table\n{README_END}\nafter\n")

    write_readme(readme, summary([kill], None, dt.datetime(2026, 12, 7, 4, tzinfo=dt.UTC)))

    text = readme.read_text()
    assert text.startswith("# Gatehouse\n\nbefore\n") and text.endswith(f"{README_END}\nafter\n")
    assert "an old table" not in text
    assert "Latest run: 2026-12-07 04:00 UTC" in text
    assert (
        "| SIGKILL each process in turn | yes | 0 of 2400 visitors, 0 of 600 payments"
        " | 1 visitors, 0 invites | 0 | 6.52 / 7.80 s; 2.9 s |"
    ) in text
