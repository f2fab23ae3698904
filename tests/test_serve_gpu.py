"""`gpulab serve` on a GPU box, driven the way the page drives it (the websocket), without a
browser: GPU machines here have no Chromium. The session's Monte Carlo run is read back from
the run history, which says on which device it ran and what it answered.

With GPULAB_SERVE_RECORD=FILE the session's output (what the page's terminal was sent) is kept;
`python tests/serve_replay.py FILE docs/serve-gpu.png` on a machine with Chromium then draws it
in the same page for a screenshot."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from serve_helpers import TERMINAL_SIZE, served

from gpulab.serve.session import children, descendants, start_time

pytest.importorskip("textual_serve", reason="gpulab serve needs the web extra")

RUN_TIMEOUT_S = 120.0


def _history(env: dict[str, str]) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-m", "gpulab", "history", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["runs"]  # history --json: {"schema": ..., "runs": [...]}


async def _until(what: str, check, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        await asyncio.sleep(0.25)
    pytest.fail(f"timed out waiting for {what}")


async def serve_and_run_montecarlo(tmp_path) -> tuple[dict, list[tuple[int, int]]]:
    """Starts `gpulab serve`, opens a session, presses `r`, closes the session and stops the
    server; the kept run, and the session's processes (all gone by then)."""
    import aiohttp

    cols, rows = TERMINAL_SIZE  # what the browser test's window holds, for a faithful replay
    with served(tmp_path) as (proc, url, log):
        seen = bytearray()
        async with aiohttp.ClientSession() as client:
            ws = await client.ws_connect(
                f"{url.replace('http', 'ws', 1)}/ws?width={cols}&height={rows}",
                headers={"Origin": url},
            )

            async def read() -> None:
                async for message in ws:
                    if message.type == aiohttp.WSMsgType.BINARY:
                        seen.extend(message.data)

            reader = asyncio.create_task(read())
            await ws.send_str(json.dumps(["focus"]))  # as the page does: the footer shows keys
            await _until("the worker to be ready", lambda: b"ready in" in seen, RUN_TIMEOUT_S)
            app = children(proc.pid)[0]
            tree = [(app, start_time(app)), *descendants(app)]
            await ws.send_str(json.dumps(["stdin", "r"]))
            await _until("the answer", lambda: "pi ≈".encode() in seen, RUN_TIMEOUT_S)
            if os.environ.get("GPULAB_SERVE_RECORD"):
                await asyncio.sleep(1.0)  # the rows and gauges drawn after the answer
                Path(os.environ["GPULAB_SERVE_RECORD"]).write_bytes(bytes(seen))
            await ws.close()
            reader.cancel()
        await _until(
            "the session's processes to end",
            lambda: all(start_time(p) != t for p, t in tree),
            15,
        )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0, log.read_text()
    runs = _history(dict(os.environ, GPULAB_DATA_DIR=str(tmp_path / "data")))
    assert len(runs) == 1, runs
    return runs[0], tree


@pytest.mark.gpu
async def test_serve_runs_montecarlo_on_the_gpu(tmp_path):
    run, tree = await serve_and_run_montecarlo(tmp_path)
    assert run["status"] == "result" and run["verdict"] == "pass", run
    assert not run["device"].startswith("CPU"), run["device"]
    pi = float(re.match(r"pi ≈ (\d\.\d+)", run["headline"]).group(1))
    assert abs(pi - 3.14159265) < 0.01, run["headline"]
    assert len(tree) >= 2, "the session had no worker"
