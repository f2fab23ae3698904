"""`gpulab ex profile NAME`: the torch.profiler view of the learner's own code, from the worker.

The profile is the hidden job `exercise-profile` (gpulab/exercises/profile_job.py), so it runs
where checks run, in the worker; this process imports no torch. Registered by gpulab/cli.py
(`register`, through `ex.cli.add_verb`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpulab.ex.cli import add_verb


def register(sub: Any) -> None:
    """`gpulab ex profile`, on the `ex` parser gpulab/cli.py registered."""
    ex = sub.choices["exercises"]
    p = add_verb(ex, "profile", "torch.profiler's view of your code: syncs, kernels, top ops", cmd)
    p.add_argument("name", help="exercise id, folder name or number")
    p.add_argument("--seed", type=int, default=0, help="the seed of the input sets (default 0)")
    p.add_argument("--file", metavar="PATH", help="profile this file instead of yours")


def cmd(args: argparse.Namespace) -> int:
    """Run the profile in a worker (in this process with --inline) and print it."""
    # deferred: keeps `gpulab`'s start-up light: the job, asyncio and the runner load when the verb runs
    # deferred: keeps `gpulab`'s start-up light: the job, asyncio and the runner load when the verb runs
    import asyncio
    import json
    from pathlib import Path

    # deferred: keeps `gpulab`'s start-up light: the job, asyncio and the runner load when the verb runs
    # deferred: keeps `gpulab`'s start-up light: the job, asyncio and the runner load when the verb runs
    from gpulab.core import events as ev
    from gpulab.core.errors import BadInput

    # deferred: keeps `gpulab`'s start-up light: the job, asyncio and the runner load when the verb runs
    from gpulab.core.params import SEED_MAX
    from gpulab.ex.commands import _file, runnable, workspace
    from gpulab.exercises.profile_job import EXPERIMENT_ID

    ex = runnable(args, args.name)
    if not args.file:
        workspace(args).ensure(ex)  # a first look needs no check first: the starter is there
    path = Path(args.file).expanduser() if args.file else _file(args, ex)
    if not path.is_file():
        raise BadInput(f"no file {path}")
    if not 0 <= args.seed <= SEED_MAX:
        raise BadInput(f"--seed {args.seed} is not a whole number from 0 to {SEED_MAX}")
    params = {"exercise": ex.id, "path": str(path.resolve()), "seed": args.seed}
    if args.inline:
        # deferred: keeps `gpulab`'s start-up light: the job, asyncio and the runner load when the verb runs
        # deferred: keeps `gpulab`'s start-up light: the job, asyncio and the runner load when the verb runs
        from gpulab.core.devices import detect
        from gpulab.experiments.inline import run_job

        events: list[dict[str, Any]] = []
        run_job("inline", EXPERIMENT_ID, params, detect(), events.append, device_index=args.device)
        final = events[-1]
    else:
        final = asyncio.run(_in_worker(params, args.device, quiet=args.json))
    if final.get("type") != ev.RESULT:
        sys.stderr.write(f"gpulab: the profile failed: {final.get('message') or final}\n")
        return 1
    result = final.get("result") or {}
    if args.json:
        print(json.dumps(result.get("summary", {}), indent=2, default=str))
        return 0
    for art in result.get("artifacts", []):
        if art.get("name") == "profile":
            print(art.get("text", ""))
    return 0


async def _in_worker(params: dict[str, Any], device: int, *, quiet: bool) -> dict[str, Any]:
    # deferred: keeps `gpulab`'s start-up light: the job, asyncio and the runner load when the verb runs
    # deferred: keeps `gpulab`'s start-up light: the job, asyncio and the runner load when the verb runs
    from gpulab.core import events as ev
    from gpulab.exercises.profile_job import EXPERIMENT_ID
    from gpulab.runner.client.runner_client import RunnerClient

    client = RunnerClient(device_index=device, standby=False)
    await client.start()
    try:
        job = await client.submit(EXPERIMENT_ID, params, device=device)
        async for event in job:
            if not quiet and event.get("type") == ev.PROGRESS and event.get("message"):
                sys.stderr.write(f"  {event['message']}\n")
        return job.final or {}
    finally:
        await client.shutdown()
