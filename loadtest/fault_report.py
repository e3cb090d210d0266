"""What `python -m loadtest.faults` writes: docs/reliability.md from its runs and the scaled
tests' records, and the fault table between the README's markers."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Outcome:
    """One run, as docs/reliability.md shows it."""

    name: str
    title: str
    fault: str
    load: str
    figures: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ok: bool = True

    def figure(self, what: str, value: object, ok: bool = True) -> None:
        self.figures.append((what, str(value)))
        self.ok = self.ok and ok


def write(outcomes: list[Outcome], records: Path | None, path: Path, command: str) -> None:
    tested = []
    if records is not None and records.is_dir():
        tested = [json.loads(p.read_text()) for p in sorted(records.glob("*.json"))]
    lines = [
        "# Reliability: the faults tried and what came of them",
        "",
        f"Written by `{command}` on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}. "
        "Every figure is counted in that run; nothing here is typed by hand.",
        "",
        "Counted as lost: a visitor's update never answered, a payment never applied. Counted "
        "as twice: a visitor answered twice, a person sent two invite messages. The one "
        "documented window for a second send is a sender killed after Telegram accepted a "
        "message and before its answer was recorded (docs/how-it-works.md, Workers).",
        "",
    ]
    for outcome in outcomes:
        lines += [
            f"## {outcome.title}",
            "",
            f"- Fault: {outcome.fault}",
            f"- Load: {outcome.load}",
            f"- Command: `python -m loadtest.faults {outcome.name}`",
            f"- Held: {'yes' if outcome.ok else 'NO'}",
            "",
            "| figure | value |",
            "| --- | --- |",
            *(f"| {what} | {value} |" for what, value in outcome.figures),
            "",
            *(f"{note}\n" for note in outcome.notes),
        ]
    for record in tested:
        lines += [
            f"## {record['title']}",
            "",
            f"- Fault: {record['fault']}",
            f"- Load: {record['load']}",
            f"- Command: `{record['command']}`",
            "- Held: yes (the test's assertions passed)",
            "",
            "| figure | value |",
            "| --- | --- |",
            *(f"| {what} | {value} |" for what, value in record["figures"].items()),
            "",
        ]
    path.write_text("\n".join(lines).rstrip() + "\n")


README_BEGIN = "<!-- faults:begin (written by make faults) -->"
README_END = "<!-- faults:end -->"


def summary(outcomes: list[Outcome], records: Path | None, when: dt.datetime) -> list[str]:
    """The README's table of the same run docs/reliability.md is written from: one row a
    fault, its lost, doubled and failed answers and how long until all was answered."""
    lines = [
        f"Latest run: {when:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores; every figure from"
        " [docs/reliability.md](docs/reliability.md), written by the same run.",
        "",
        "| fault | held | lost | twice | 5xx outside the fault"
        " | answers p99 / max; last answer after the fault |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for outcome in outcomes:
        f = dict(outcome.figures)
        payments = f.get("payments delivered (each twice)")
        lost = f"{f.get('lost (never answered)', '?')} of {f.get('visitors offered', '?')} visitors"
        if payments is not None:
            unpaid = int(payments) - int(f.get("payments applied", payments))
            lost += f", {unpaid} of {payments} payments"
        twice = (
            f"{f.get('answered twice', '?')} visitors, {f.get('payers sent it twice', '?')} invites"
        )
        p99 = " / ".join(f.get("answer p50 / p99 / max", "? / ? / ?").split(" / ")[1:])
        recovered = f.get("recovered (last answer after the fault ended)", "?")
        lines.append(
            f"| {outcome.title} | {'yes' if outcome.ok else 'NO'} | {lost} | {twice} |"
            f" {f.get('5xx outside the fault', '?')} | {p99}; {recovered} |"
        )
    if records is not None and records.is_dir():
        for path in sorted(records.glob("*.json")):
            record = json.loads(path.read_text())
            if record["title"].startswith("Schemathesis"):
                continue
            shown = "; ".join(f"{k}: {v}" for k, v in list(record["figures"].items())[:3])
            lines.append(f"| {record['title']} | yes | | | | {shown} |")
    return lines


def write_readme(path: Path, lines: list[str]) -> None:
    """`lines` between the README's markers, the rest as it was."""
    text = path.read_text()
    start, end = text.index(README_BEGIN), text.index(README_END)
    body = "\n".join([README_BEGIN, *lines, README_END])
    path.write_text(text[:start] + body + text[end + len(README_END) :])
