"""The launcher's progress bar for the demo month."""

from __future__ import annotations

import time
from typing import IO


class ProgressBar:
    """A bar on a terminal, redrawn in place; elsewhere (a log, a pipe) a line at each
    quarter, so that a file does not fill with redraws."""

    WIDTH = 30

    def __init__(self, out: IO[str], what: str, started: float) -> None:
        self.out = out
        self.what = what
        self.started = started
        self.redraw = out.isatty()
        self.quarter = -1
        self.drawn = False

    def show(self, done: int, total: int) -> None:
        if total <= 0:
            return
        share = min(done / total, 1.0)
        filled = round(share * self.WIDTH)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        line = f"  {self.what} [{bar}] {done}/{total} {time.monotonic() - self.started:4.0f} s"
        if self.redraw:
            print(f"\r{line}", end="", file=self.out, flush=True)
            self.drawn = True
        elif int(share * 4) > self.quarter:
            self.quarter = int(share * 4)
            print(line, file=self.out, flush=True)

    def end(self) -> None:
        if self.drawn:
            print(file=self.out, flush=True)
