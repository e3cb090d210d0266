"""report.md and its charts, under loadtest/reports/<timestamp>/."""

from __future__ import annotations

import datetime as dt
import os
import platform
from pathlib import Path

from loadtest.scenarios import Section


def write(sections: list[Section], directory: Path, command: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Load test report",
        "",
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; `{command}`; {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}.",
        "",
        "| Scenario | Measured | Target | Met |",
        "|---|---|---|---|",
    ]
    for section in sections:
        for what, figure, target in section.measured:
            lines.append(f"| {what} | {figure} | {target} | {'yes' if section.ok else 'no'} |")
    for section in sections:
        lines += ["", f"## {section.title}", ""]
        if section.machine:
            lines += [f"The machine at the start: {section.machine}.", ""]
        lines += section.lines
        for chart in _charts(section, directory):
            lines += ["", f"![{section.title}]({chart.name})"]
    path = directory / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def _charts(section: Section, directory: Path) -> list[Path]:
    if not section.series and not section.cpu:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made: list[Path] = []
    if section.series:
        panels = 3 if section.backlog else 2
        fig, axes = plt.subplots(panels, 1, figsize=(9, 3 * panels), sharex=True)
        seconds = range(len(section.series["p50"]))
        axes[0].plot(seconds, [v * 1000 for v in section.series["p50"]], label="p50")
        axes[0].plot(seconds, [v * 1000 for v in section.series["p99"]], label="p99")
        axes[0].set_ylabel("answer, ms")
        axes[0].legend()
        for series in ("offered", "answered"):
            values = section.series[series]
            axes[1].plot(range(len(values)), values, label=series)
        axes[1].set_ylabel("updates/s")
        axes[1].legend()
        if section.backlog and section.backlog.at:
            start = section.backlog.at[0]
            at = [t - start for t in section.backlog.at]
            axes[2].plot(at, section.backlog.inbox, label="inbox")
            axes[2].plot(at, section.backlog.outbox, label="outbox")
            axes[2].set_ylabel("waiting rows")
            axes[2].legend()
        axes[-1].set_xlabel("second of the run")
        fig.suptitle(section.title)
        fig.tight_layout()
        path = directory / f"{section.name}-timeline.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        made.append(path)
    if section.cpu:
        fig, ax = plt.subplots(figsize=(8, 3))
        names = sorted(section.cpu)
        ax.barh(names, [section.cpu[n] for n in names])
        ax.set_xlabel("CPU seconds over the measured run")
        ax.set_title(f"{section.title}: CPU by process")
        fig.tight_layout()
        path = directory / f"{section.name}-cpu.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        made.append(path)
    if section.busiest:
        fig, ax = plt.subplots(figsize=(8, 3))
        bots = sorted(section.busiest)
        ax.bar([str(b - min(bots) + 1) for b in bots], [section.busiest[b] for b in bots])
        ax.axhline(25, color="red", linestyle="--", label="Telegram's 25/s")
        ax.set_xlabel("bot")
        ax.set_ylabel("sends in its busiest second")
        ax.legend()
        fig.tight_layout()
        path = directory / f"{section.name}-sends.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        made.append(path)
    return made
