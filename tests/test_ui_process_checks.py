"""A check asked for by a process that has not imported the grader, as the TUI's is.

The worker registers the hidden jobs (a check, an exercise's preparation); the asking process
must not need them registered too. In one pytest process some other test has always imported
the grader, so this runs in a fresh interpreter: the TUI's own path, the real RunnerClient and
its real worker, on the CPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    from gpulab.ex.session import Checker
    from gpulab.exercises.loader import find
    from gpulab.runner.client.runner_client import RunnerClient

    async def main():
        ex = find("vector-add")
        client = RunnerClient(standby=False)
        await client.start()
        try:
            checker = Checker(client=client, quick=True)
            prepared = await checker.prepare(ex)
            prepare_final = dict(checker.last_final)
            result, _ = await checker.check(ex, ex.solution_path, 7)
        finally:
            await client.shutdown()
        grader = sorted(m for m in sys.modules if m.startswith("gpulab.exercises.job"))
        print(json.dumps({"verdict": result.verdict, "message": result.message,
                          "prepare": prepare_final.get("type"), "grader": grader}))

    asyncio.run(main())
    """
)


def test_the_tuis_process_asks_for_a_check_and_a_preparation_without_the_grader(tmp_path):
    env = dict(os.environ, GPULAB_DATA_DIR=str(tmp_path / "data"))
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")]).strip(os.pathsep)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=os.getcwd(),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    said = json.loads(out.stdout.strip().splitlines()[-1])
    assert said["verdict"] == "pass", said["message"]
    assert said["prepare"] == "result", said
    assert said["grader"] == []  # asked for, not imported: the worker runs it
