"""A submitted job and its events, in order (the runner client's unit of work)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from gpulab.core import events as ev


class Job:
    """One submitted experiment run and its events, in order."""

    def __init__(self, job_id: str, experiment: str, params: dict[str, Any], device: int) -> None:
        self.id = job_id
        self.experiment = experiment
        self.params = params
        self.device = device
        self.events: list[dict[str, Any]] = []
        self.done = False
        self.final: dict[str, Any] | None = None
        self.submitted_at = time.time()
        self._changed = asyncio.Event()

    def __repr__(self) -> str:
        state = self.final["type"] if self.final else "running"
        return f"<Job {self.id} {self.experiment} {state}>"

    def _push(self, event: dict[str, Any]) -> bool:
        if self.done:
            return False
        self.events.append(event)
        if event["type"] in ev.FINAL:
            self.done = True
            self.final = event
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
        return True

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[dict[str, Any]]:
        seen = 0
        while True:
            changed = self._changed
            while seen < len(self.events):
                seen += 1
                yield self.events[seen - 1]
            if self.done:
                return
            await changed.wait()

    async def wait(self) -> dict[str, Any]:
        """The job's final event, once it arrives."""
        while not self.done:
            await self._changed.wait()
        assert self.final is not None
        return self.final
