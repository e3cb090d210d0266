"""The report says what the machine was doing as each scenario started."""

from __future__ import annotations

from pathlib import Path

from loadtest import report
from loadtest.scenarios import Section
from loadtest.stack import machine_now


def test_machine_now__load_idle_share_and_a_fixed_loops_time() -> None:
    machine = machine_now(window=0.2)
    assert all(value >= 0 for value in machine.load)
    assert 0 <= machine.idle_percent <= 100
    assert machine.loop_ms > 0
    described = machine.describe()
    assert described.startswith(f"load average {machine.load[0]:.2f} ")
    assert f"{machine.idle_percent:.0f}% of the CPU idle" in described


def test_report__each_section_says_the_machine_at_its_start(tmp_path: Path) -> None:
    first = Section("a", "First", lines=["- a line"], machine="load average 0.10 / 0.20 / 0.30")
    second = Section("b", "Second", lines=["- another"])
    text = report.write([first, second], tmp_path, "python -m loadtest a b").read_text()
    assert (
        "## First\n\nThe machine at the start: load average 0.10 / 0.20 / 0.30.\n\n- a line" in text
    )
    # No machine measured, no line.
    assert "## Second\n\n- another" in text
