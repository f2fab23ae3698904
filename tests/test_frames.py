"""The runner client's reading of a worker's raw output: what reaches the learner's output."""

from __future__ import annotations

import asyncio
from typing import Any

from gpulab.runner.client.frames import FrameReader
from gpulab.runner.client.handle import WorkerProcess


def _reader(lines: list[tuple[str, str]]) -> FrameReader:
    def unused(*_: Any) -> None:
        raise AssertionError("only output lines are read here")

    return FrameReader(
        device_index=0,
        note=unused,
        on_event=unused,
        on_line=lambda _w, name, line: lines.append((name, line)),
        on_hello=unused,
        on_refused=unused,
        on_guarded=unused,
        on_standby=unused,
        on_retiring=unused,
    )


async def _read(raw: bytes, name: str) -> tuple[list[tuple[str, str]], list[str]]:
    stream = asyncio.StreamReader()
    stream.feed_data(raw)
    stream.feed_eof()
    lines: list[tuple[str, str]] = []
    worker = WorkerProcess(proc=None, cmd_fd=-1, spawned=0.0, role="active")  # type: ignore[arg-type]
    await _reader(lines).read_output(worker, stream, name)
    return lines, list(worker.stderr_tail)


async def test_the_profilers_own_start_and_stop_notes_are_not_the_learners_output() -> None:
    raw = (
        b"USDT:2026-11-26 09:16:55 17664:17664 SyncActivityProfilerHandler.cpp:52] profiler_start\n"
        b"step 3 done\n"
        b"USDT:2026-11-26 09:16:55 17664:17664 SyncActivityProfilerHandler.cpp:59] profiler_stop\n"
        b"USDT: my own note about profiler_start\n"
    )
    lines, tail = await _read(raw, "stderr")
    assert lines == [
        ("stderr", "step 3 done"),
        ("stderr", "USDT: my own note about profiler_start"),
    ]
    assert tail == ["step 3 done", "USDT: my own note about profiler_start"]


async def test_a_learner_printing_the_same_text_to_stdout_keeps_it() -> None:
    note = "USDT:2026-11-26 09:16:55 1:1 SyncActivityProfilerHandler.cpp:52] profiler_start"
    lines, _ = await _read(note.encode() + b"\n", "stdout")
    assert lines == [("stdout", note)]
