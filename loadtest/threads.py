"""Background threads for the length of a `with` block: started on entering, told to stop
(`stopping`) and joined on leaving."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Self


class Threads:
    def __init__(self, *targets: Callable[[], None], join_within: float) -> None:
        self.stopping = threading.Event()
        self.join_within = join_within
        self.threads = [threading.Thread(target=target, daemon=True) for target in targets]

    def __enter__(self) -> Self:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=self.join_within)
