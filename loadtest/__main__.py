"""`python -m loadtest [scenario ...]`: run the load scenarios and write the report.

    make loadtest                                   # every scenario, about 30 minutes
    python -m loadtest reference-1 --seconds 20     # one, shorter

Writes loadtest/reports/<timestamp>/report.md with its charts, prints its path, and exits 1
when a scenario missed its target.
"""

from __future__ import annotations

import argparse
import datetime as dt
import signal
import sys
import time
from pathlib import Path

from loadtest import report
from loadtest.scenarios import SCENARIOS, Options
from loadtest.stack import machine_now


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest", description=__doc__.split("\n")[0])
    parser.add_argument("scenarios", nargs="*", choices=[[], *SCENARIOS], default=[])
    parser.add_argument("--rate", type=float, default=Options.rate)
    parser.add_argument("--seconds", type=float, default=Options.seconds)
    parser.add_argument("--bots", type=int, default=Options.bots)
    parser.add_argument("--quiet", type=float, default=Options.quiet)
    parser.add_argument(
        "--step-seconds",
        type=float,
        default=Options.step_seconds,
        help="how long the capacity scenario offers each rate",
    )
    parser.add_argument("--reports", type=Path, default=Path(__file__).parent / "reports")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="py-spy and pg_stat_statements over the update path's load (loadtest/profile.py)",
    )
    args = parser.parse_args(argv)
    # A stop signal unwinds like Ctrl-C, so every process and the database are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    options = Options(
        bots=args.bots,
        rate=args.rate,
        seconds=args.seconds,
        quiet=args.quiet,
        step_seconds=args.step_seconds,
        profile=args.profile,
    )
    chosen = args.scenarios or list(SCENARIOS)
    sections = []
    for name in chosen:
        machine = machine_now()
        started = time.monotonic()
        print(f"{name} ... ({machine.describe()})", flush=True)
        section = SCENARIOS[name](options)
        section.machine = machine.describe()
        print(
            f"{name}: {'met' if section.ok else 'MISSED'} in {time.monotonic() - started:.0f} s",
            flush=True,
        )
        sections.append(section)
    directory = args.reports / f"{dt.datetime.now(dt.UTC):%Y%m%d-%H%M%S}"
    path = report.write(sections, directory, "python -m loadtest " + " ".join(argv or sys.argv[1:]))
    print(path.read_text())
    print(f"report: {path}")
    return 0 if all(s.ok for s in sections) else 1


if __name__ == "__main__":
    sys.exit(main())
