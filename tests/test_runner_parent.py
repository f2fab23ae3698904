"""kill -9 of the app (or an SSH drop) must not leave a worker behind holding the GPU."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_runner import pid_alive

from gpulab.testing.signals import default_signals

REPO = Path(__file__).resolve().parents[1]

PARENT = textwrap.dedent(
    """
    import asyncio, sys, time
    from gpulab.runner.client.runner_client import RunnerClient

    async def main():
        client = RunnerClient()
        await client.start()
        await client.wait_ready(120)
        while client.standby_pid is None:  # the spare starts once the worker idles a moment
            await asyncio.sleep(0.01)
        job = await client.submit("break-it", {"mode": sys.argv[1]})
        async for event in job:
            if event["type"] == "progress":
                break
        print(client.worker_pid, client.standby_pid, flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP], ids=["SIGKILL", "SIGHUP"])
def test_worker_and_spare_exit_within_2_s_when_their_parent_is_killed(sig):
    """The worker is busy in a job that ignores cancels: only EOF / PDEATHSIG can end it. The
    spare may be stopped (SIGSTOP while a job runs), so only PDEATHSIG can end it. SIGHUP (a
    closed terminal) ends the parent by default, as a kill does."""
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, "hang-ignoring-cancel"],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,  # as from a terminal: under nohup SIGHUP comes in ignored
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])
            ),
        },
    )
    try:
        line = parent.stdout.readline()  # blocks until the worker runs the job
        worker, spare = (int(x) for x in line.split())
        assert pid_alive(worker) and pid_alive(spare)
        parent.send_signal(sig)
        parent.wait(10)
        deadline = time.monotonic() + 2.0
        while (pid_alive(worker) or pid_alive(spare)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not pid_alive(worker), "the worker outlived its parent by 2 s"
        assert not pid_alive(spare), "the spare outlived its parent by 2 s"
    finally:
        parent.kill()
        parent.wait(10)
