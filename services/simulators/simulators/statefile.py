"""A simulated server's state kept in a JSON file, so that a restarted demo continues where it
stopped: read at start, written when the server stops and every few seconds while it changes
(a killed server loses at most those seconds)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
SAVE_EVERY = 2.0


class StateFile:
    def __init__(
        self, path: Path, snapshot: Callable[[], dict[str, Any]], version: Callable[[], object]
    ) -> None:
        self.path = path
        self.snapshot = snapshot
        # Something that grows with every change: a save is skipped while it stands still.
        self.version = version
        self.saved_version: object = None

    @classmethod
    def restored(
        cls,
        snapshot: Callable[[], dict[str, Any]],
        version: Callable[[], object],
        restore: Callable[[dict[str, Any]], None],
    ) -> StateFile | None:
        """The file `SIM_STATE_FILE` names, with what it holds already given to `restore`;
        None when the variable is unset (tests, the load rig): nothing is kept."""
        path = os.environ.get("SIM_STATE_FILE", "").strip()
        if not path:
            return None
        state = cls(Path(path), snapshot, version)
        saved = state.load()
        if saved:
            restore(saved)
        return state

    def load(self) -> dict[str, Any] | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            loaded = json.loads(text)
        except ValueError:
            # Written whole and renamed into place, so this is someone's hand edit: start fresh.
            log.warning("ignoring unreadable simulator state in %s", self.path)
            return None
        return loaded if isinstance(loaded, dict) else None

    def save(self) -> None:
        version = self.version()
        if version == self.saved_version:
            return
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        temporary.write_text(json.dumps(self.snapshot(), separators=(",", ":")), encoding="utf-8")
        os.replace(temporary, self.path)
        self.saved_version = version

    @asynccontextmanager
    async def saving(self) -> AsyncIterator[None]:
        """Saved every SAVE_EVERY seconds while the block runs, and once more when it ends."""
        task = asyncio.create_task(self._keep_saving())
        try:
            yield
        finally:
            task.cancel()
            self.save()

    async def _keep_saving(self) -> None:
        while True:
            await asyncio.sleep(SAVE_EVERY)
            self.save()


def saving(state: StateFile | None) -> AbstractAsyncContextManager[None]:
    """`state.saving()`, or nothing to do without a state file."""
    return state.saving() if state is not None else nullcontext()
