"""Checks from a front end (the CLI, the TUI, the bench): through the worker, with a time limit.

    async with Checker() as checker:
        result, seconds = await checker.check(exercise, path, seed)

The check is the `exercise-check` job, so it runs in the worker. The exercise's time limit
counts from the job's `accepted` event (the worker's start-up is not the learner's fault); past
it the job is cancelled, and a learner's endless loop, which never sees the cooperative flag,
has its worker killed and replaced by the runner. `inline=True` runs the grader in this process
instead (tests; it has no time limit and no crash survival).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpulab.core import events as ev
from gpulab.exercises.loader import Exercise
from gpulab.exercises.outcome import CHECK_JOB, FAIL, PREPARE_JOB, CheckResult, outcome

EventCallback = Callable[[dict[str, Any]], None]


class Checker:
    """Runs exercise checks in a worker with the exercise's time limit (or inline in tests)."""

    def __init__(
        self,
        *,
        device: int = 0,
        standby: bool = True,
        quick: bool = False,
        inline: bool = False,
        on_event: EventCallback | None = None,
        time_limit: float | None = None,
        env: dict[str, str] | None = None,
        client: Any = None,
    ) -> None:
        """`client`: a RunnerClient the caller owns (the TUI's), used as it is and left running."""
        self.device = device
        self.quick = quick
        self.inline = inline
        self.on_event = on_event
        self.time_limit = time_limit  # overrides the exercise's own (tests)
        self.client: Any = client
        self.job: Any = None  # the check in flight, for cancel()
        self.last_final: dict[str, Any] = {}  # the last job's final event (how it ended)
        self._owned = client is None and not inline
        if self._owned:
            # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
            from gpulab.runner.client.runner_client import RunnerClient

            self.client = RunnerClient(
                device_index=device, standby=standby, on_event=self._runner_event, env=env
            )

    def _runner_event(self, event: dict[str, Any]) -> None:
        if self.on_event is not None and not event.get("job"):
            self.on_event(event)

    async def __aenter__(self) -> Checker:
        if self._owned:
            await self.client.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._owned:
            await self.client.shutdown()

    async def cancel(self) -> bool:
        """Cancel the check in flight (a person pressed escape); False when none is."""
        job = self.job
        if job is None or job.done or self.client is None:
            return False
        await self.client.cancel(job)
        return True

    async def prepare(self, ex: Exercise) -> float:
        """Have the worker compile what `ex`'s check needs (the `exercise-prepare` job, as the
        TUI does when an exercise is opened); the seconds it took (0 inline)."""
        if self.inline:
            return 0.0
        t0 = time.perf_counter()
        job = await self.client.submit(
            PREPARE_JOB, {"exercise": ex.id}, device=self.device, hidden=True
        )
        async for _event in job:
            pass
        self.last_final = job.final or {}
        return time.perf_counter() - t0

    async def check(
        self, ex: Exercise, path: Path, seed: int, *, first_failure: bool = False
    ) -> tuple[CheckResult, float]:
        """(the verdict, seconds from submitting to the verdict); `first_failure` stops at the
        first wrong input set (a sweep of known-wrong files)."""
        t0 = time.perf_counter()
        if self.inline:
            # deferred: the grader's imports (NumPy, the watch) only where it runs in this process
            from gpulab.exercises.job import check_inline

            result, events = await asyncio.to_thread(
                check_inline, ex.id, str(path), seed, quick=self.quick, first_failure=first_failure
            )
            for event in events:
                if self.on_event is not None:
                    self.on_event(event)
            return result, time.perf_counter() - t0
        limit = self.time_limit or ex.time_limit
        params = {
            "exercise": ex.id,
            "path": str(path),
            "seed": seed,
            "quick": self.quick,
            "first_failure": first_failure,
        }
        job = self.job = await self.client.submit(
            CHECK_JOB, params, device=self.device, hidden=True
        )
        loop = asyncio.get_running_loop()
        timed_out: list[bool] = []
        cancels: list[asyncio.Task[None]] = []

        def expire() -> None:
            if not job.done:
                timed_out.append(True)
                cancels.append(loop.create_task(self.client.cancel(job)))

        timer: asyncio.TimerHandle | None = None
        try:
            async for event in job:
                if event["type"] == ev.ACCEPTED:
                    timer = loop.call_later(limit, expire)
                if self.on_event is not None:
                    self.on_event(event)
        finally:
            if timer is not None:
                timer.cancel()
            for task in cancels:
                with contextlib.suppress(Exception):
                    await task
        final = self.last_final = job.final or {}
        self.job = None
        seconds = time.perf_counter() - t0
        if timed_out:
            how = final.get("how")
            replaced = " and its worker replaced" if how == "killed" else ""
            message = (
                f"the check did not finish within its time limit of {limit:g} s (an endless "
                f"loop, or far too slow?); it was stopped{replaced}"
            )
            return CheckResult(ex.id, FAIL, message, seed, str(path), kind="timeout"), seconds
        return outcome(final, ex.id, str(path), seed), seconds


def record(store: Any, result: CheckResult) -> Any:
    """Save the attempt in the progress store; returns the exercise's progress after it."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.exercises.progress import Progress

    fraction = (result.timing or {}).get("fraction")
    return Progress(store).record(
        result.exercise,
        result.verdict,
        seed=result.seed,
        grade=result.grade,
        fraction=fraction,
        kind=result.kind,
        message=result.message,
        emulated=result.emulated,
    )
