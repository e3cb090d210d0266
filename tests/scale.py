"""How large the runs that prove a behaviour at scale are. `make test` runs each at a size that
shows the behaviour inside the suite's time budget; `make faults` sets GATEHOUSE_FULL_SCALE=1 and
runs the tests marked `scaled` at full size."""

from __future__ import annotations

import os

FULL = os.environ.get("GATEHOUSE_FULL_SCALE") == "1"


def sized(small: int, full: int) -> int:
    return full if FULL else small
