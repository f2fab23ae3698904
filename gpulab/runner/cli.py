"""`gpulab run`: one experiment through the runner (a worker process), as the TUI runs it.

Prints a table, or with --json one JSON line per event of the job. Ctrl-C and --timeout cancel the
job (cooperatively, then by replacing the worker). Exit codes: 0 result, 1 failed, 2 bad input,
130 cancelled.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import time
from typing import Any

from gpulab.core import datadir
from gpulab.core import events as ev
from gpulab.core.doc_tags import tagged
from gpulab.core.errors import BadInput
from gpulab.core.params import parse_assignments, parse_index, parse_plain_number, shown
from gpulab.render.results import render_result

TIMEOUT_MAX_S = 86_400.0  # a day: past it a typo, not a plan


def add_parser(sub: Any) -> None:
    """Register `gpulab run EXPERIMENT [--set NAME=VALUE ...]` and its options."""
    run = sub.add_parser("run", help="run one experiment headless")
    run.add_argument("experiment", help="experiment id (see gpulab list)")
    run.add_argument(
        "--set", dest="sets", action="append", default=[], metavar="NAME=VALUE", help="a parameter"
    )
    run.add_argument("--json", action="store_true", help="one JSON object per event, per line")
    run.add_argument("--device", default="0", help="CUDA device index (default 0)")
    run.add_argument("--plot", action="store_true", help="print the result's plots as text")
    run.add_argument(
        "--timeout",
        metavar="SECONDS",
        help=f"cancel after this many seconds (more than 0, at most {TIMEOUT_MAX_S:g})",
    )
    run.add_argument(
        "--predict",
        metavar="VALUE",
        help="say first what the fastest row will do: its time (2ms, 300us), its percent of "
        "the ceiling (40%%) or which contender wins (its id); shown beside the measurement",
    )


def main(args: argparse.Namespace) -> int:
    """`gpulab run`: one experiment headless, its events printed; the exit code says how it ended."""
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.experiments.registry import get

    datadir.require()  # found before minutes of work, not after
    exp = get(args.experiment)
    try:
        params = exp.params.validate(parse_assignments(args.sets))
    except ValueError as exc:  # a malformed NAME=VALUE, or a ParamError: one line either way
        raise BadInput(str(exc)) from None
    device, timeout = run_flags(args.device, args.timeout)
    guess = None
    if getattr(args, "predict", None) is not None:
        # deferred: the command's work loads when it runs, not at every gpulab start
        from gpulab.history.predictions import parse

        guess = parse(args.predict, [c.id for c in exp.contenders], flag="--predict")
        if guess is None:
            raise BadInput("--predict needs a value: a time (2ms), a percent (40%) or a contender")
    return run_headless(
        exp.id,
        params,
        as_json=args.json,
        device=device,
        timeout=timeout,
        plots=args.plot,
        guess=guess,
    )


def run_flags(device: str, timeout: str | None) -> tuple[int, float]:
    """`gpulab run`'s --device and --timeout: (device, seconds or 0 for none); BadInput names
    the flag. Whether the device exists is the worker's to say: it knows the GPUs."""
    try:
        index = parse_index(device)
    except ValueError:
        raise BadInput(
            f"--device {shown(device)} is not allowed; expected a GPU index: 0, 1, ..."
        ) from None
    if timeout is None:
        return index, 0.0
    allowed = f"expected seconds, more than 0 and at most {TIMEOUT_MAX_S:g}"
    try:
        seconds = parse_plain_number(timeout)
    except ValueError:
        raise BadInput(
            f"--timeout {shown(timeout)} is not a number of seconds; {allowed}"
        ) from None
    if not 0 < seconds <= TIMEOUT_MAX_S:
        raise BadInput(f"--timeout {timeout.strip()[:40]} is out of range; {allowed}")
    return index, seconds


def print_event(event: dict[str, Any], as_json: bool, plots: bool = False) -> None:
    """Print one runner event as a line of text (or of JSON)."""
    if as_json:
        sys.stdout.write(json.dumps(tagged("event", event), default=str) + "\n")
        sys.stdout.flush()
        return
    kind = event["type"]
    if kind == ev.PROGRESS:
        sys.stderr.write(f"  [{event['fraction'] * 100:5.1f}%] {event['message']}\n")
    elif kind == ev.LOG:
        sys.stderr.write(f"  | {event['line']}\n")
    elif kind == ev.RESULT:
        print(render_result(event["result"], plots=plots))
    elif kind == ev.FAILED:
        sys.stderr.write(f"gpulab: {event['kind']}: {event['message']}\n")
        if event.get("explanation"):
            sys.stderr.write(f"  {event['explanation']}\n")
    elif kind == ev.CANCELLED:
        sys.stderr.write(
            f"gpulab: cancelled ({event.get('how', '')}): {event.get('message', '')}\n"
        )


def exit_code(final: str, event: dict[str, Any] | None) -> int:
    """The process's exit status for a run's final event: 0 result, 2 bad parameters, 130
    cancelled, else 1."""
    if final == ev.RESULT:
        return 0
    if final == ev.FAILED and event and event.get("kind") == ev.KIND_BAD_PARAMS:
        return 2
    if final == ev.CANCELLED:
        return 130
    return 1


def _client_event(event: dict[str, Any], as_json: bool = False) -> None:
    """What the runner says outside the job: the worker's own output and its replacements."""
    if event.get("job"):
        return
    if as_json:  # every event, the runner's own too, is a JSON line
        print_event(event, True)
    elif event["type"] == ev.LOG and event.get("stream") in ("stdout", "stderr"):
        sys.stderr.write(f"  | worker: {event['line']}\n")
    elif event["type"] == ev.FAILED:
        sys.stderr.write(f"gpulab: {event['kind']}: {event['message']}\n")


async def _run(
    experiment: str,
    params: dict[str, Any],
    *,
    as_json: bool,
    device: int,
    timeout: float,
    plots: bool = False,
    guess: Any = None,
) -> int:
    # deferred: the command's work loads when it runs, not at every gpulab start
    import asyncio

    from gpulab.history.entries import PolledWatch
    from gpulab.runner.client.runner_client import RunnerClient

    loop = asyncio.get_running_loop()

    def on_event(event: dict[str, Any]) -> None:
        _client_event(event, as_json)

    async with RunnerClient(device_index=device, on_event=on_event) as client:
        job = await client.submit(experiment, params, device=device)  # BadInput: exit 2
        # Kept before the run starts: a prediction is made before the figure is seen
        pending = _predict(experiment, guess)
        watch = PolledWatch()
        started = time.time()
        cancels: list[asyncio.Task[None]] = []

        def cancel(why: str) -> None:
            if not job.done:
                sys.stderr.write(f"gpulab: {why}, cancelling\n")
                cancels.append(loop.create_task(client.cancel(job)))

        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, cancel, "interrupted")
        timer: asyncio.TimerHandle | None = None
        try:
            async for event in job:
                # --timeout counts the run, not the worker's warm-up before it.
                if event["type"] == ev.ACCEPTED and timeout > 0:
                    timer = loop.call_later(timeout, cancel, f"--timeout {timeout:g} s reached")
                if event["type"] == ev.ACCEPTED:
                    watch.start((client.handshake or {}).get("inventory"), device)
                print_event(event, as_json, plots)
        finally:
            if timer is not None:
                timer.cancel()
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            for task in cancels:
                with contextlib.suppress(Exception):
                    await task
        final = job.final or {}
        # Printed first, kept after: a history that cannot be written costs one line.
        keep(experiment, params, final, client.handshake, device, watch.stop(), started, as_json)
        if pending is not None:
            _settle(pending, final, as_json)
        return exit_code(final.get("type", ev.FAILED), final)


def _say(line: str) -> None:
    sys.stderr.write(f"gpulab: {line}\n")


def _predict(experiment: str, guess: Any) -> Any:
    """The learner's prediction kept before the run (None: none was made)."""
    if guess is None:
        return None
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.history.predictions import EXPERIMENT, keep

    return keep(EXPERIMENT, experiment, guess, _say)


def _settle(pending: Any, final: dict[str, Any], as_json: bool) -> None:
    """The prediction beside the run's measurement, and the calibration: printed last (one
    tagged JSON line with --json)."""
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.history.predictions import experiment_figure, report, report_lines, settle

    result = final.get("result") if final.get("type") == ev.RESULT else None
    if result:
        value, note = experiment_figure(pending.quantity, result)
        device = str((result.get("record") or {}).get("device", ""))
    else:
        value, note, device = None, f"the run ended {final.get('type', 'without a result')}", ""
    done, cal = settle(pending, value, device, note, _say)
    if as_json:
        sys.stdout.write(json.dumps(tagged("prediction", report(done, cal)), default=str) + "\n")
    else:
        print("\n".join(report_lines(done, cal)))


def keep(
    experiment: str,
    params: dict[str, Any],
    final: dict[str, Any],
    handshake: dict[str, Any] | None,
    device: int,
    telemetry: dict[str, Any],
    started: float,
    as_json: bool,
) -> int | None:
    """Store the finished run in the history; a failure is one line on stderr, never an exit."""
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.history.entries import entry, save, worth_keeping

    try:
        kept = entry(
            experiment,
            params,
            final,
            source="cli",
            inventory=(handshake or {}).get("inventory"),
            device_index=device,
            telemetry=telemetry,
            started=started,
            ended=time.time(),
        )
        if not worth_keeping(kept):
            return None
        run_id = save(kept)
    except Exception as exc:  # noqa: BLE001 - the run's output is already printed
        sys.stderr.write(f"gpulab: this run was not kept in the history: {exc}\n")
        return None
    if not as_json and final.get("type") == ev.RESULT:
        sys.stderr.write(f"gpulab: kept as run {run_id} (gpulab history show {run_id})\n")
    return run_id


def run_headless(
    experiment: str,
    params: dict[str, Any],
    *,
    as_json: bool,
    device: int = 0,
    timeout: float = 0,
    plots: bool = False,
    guess: Any = None,
) -> int:
    """Run `experiment` in a worker without the TUI and return its exit code; `guess` (a
    history.predictions.Guess) is kept first and shown beside the measurement after."""
    import asyncio  # deferred: the event loop loads when a run starts, not at every gpulab start

    return asyncio.run(
        _run(
            experiment,
            params,
            as_json=as_json,
            device=device,
            timeout=timeout,
            plots=plots,
            guess=guess,
        )
    )
