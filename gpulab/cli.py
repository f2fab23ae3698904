"""`gpulab` command line: the TUI by default; info, list, run, bench, lessons, serve, ...

Bad input from a person (unknown experiment or parameter, a malformed or out-of-range value)
exits with status 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from gpulab import __version__
from gpulab.core.params import parse_index, parse_plain_number, shown
from gpulab.core.schema import tagged

EXIT_BAD_INPUT = 2
SAMPLE_PERIOD_ENV = "GPULAB_SAMPLE_PERIOD"
# The telemetry sampler's range (gpulab.telemetry.sampler.MIN_INTERVAL / MAX_INTERVAL; a test
# keeps the two equal without importing telemetry here).
SAMPLE_PERIOD_MIN, SAMPLE_PERIOD_MAX = 0.25, 5.0
TIMEOUT_MAX_S = 86_400.0  # a day: past it a typo, not a plan


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        sys.stderr.write(f"gpulab: {message} (see gpulab --help)\n")
        raise SystemExit(EXIT_BAD_INPUT)


def _fail(message: str) -> int:
    sys.stderr.write(f"gpulab: {message}\n")
    return EXIT_BAD_INPUT


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gpulab", description="A terminal lab for learning GPU computing.")
    p.add_argument("--version", action="version", version=f"gpulab {__version__}")
    p.add_argument("--data-dir", help="where progress and run history live (env GPULAB_DATA_DIR)")
    p.add_argument(
        "--sample-period",
        metavar="SECONDS",
        help=f"how often the TUI reads the GPU's telemetry, {SAMPLE_PERIOD_MIN:g}-"
        f"{SAMPLE_PERIOD_MAX:g} s (default 0.5; env {SAMPLE_PERIOD_ENV})",
    )
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

    info = sub.add_parser("info", help="backends, devices and the GPU's figures")
    info.add_argument("--json", action="store_true", help="print JSON")

    lst = sub.add_parser("list", help="experiments and their parameters")
    lst.add_argument("--json", action="store_true", help="print JSON")

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

    bench = sub.add_parser("bench", help="run the benchmark suite, write JSON and Markdown")
    bench.add_argument("--suite", default="core", help="core (default), full or exercises")
    bench.add_argument("--json", dest="json_path", help="write the JSON results here")
    bench.add_argument("--markdown", dest="md_path", help="write the Markdown table here")
    bench.add_argument(
        "--only", action="append", default=[], help="run just these experiments (a,b or repeated)"
    )
    bench.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="exercises: check each reference solution this many times in a row (default 3)",
    )

    lessons = sub.add_parser("lessons", help="list lessons and your progress")
    lessons.add_argument("--json", action="store_true", help="print JSON")

    store = sub.add_parser("store", help="check the progress file, or recover a damaged one")
    store.add_argument(
        "action",
        nargs="?",
        default="check",
        choices=("check", "recover"),
        help="check (default), or recover: copy the file aside and salvage what can be read",
    )
    store.add_argument("--json", action="store_true", help="print JSON")

    from gpulab.history.cli import add_parser as add_history

    add_history(sub)

    from gpulab.exercises.cli import add_parser as add_exercises

    add_exercises(sub)
    from gpulab.completion import add_parser as add_completion
    from gpulab.doctor.cli import add_parser as add_doctor
    from gpulab.serve.cli import add_parser as add_serve

    add_doctor(sub)
    add_serve(sub)
    add_completion(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.data_dir:
        import os

        os.environ["GPULAB_DATA_DIR"] = args.data_dir
    period = sample_period(args.sample_period) if args.command is None else None
    if args.command is not None and args.sample_period is not None:
        period = sample_period(args.sample_period)  # checked even where it does not apply
    if isinstance(period, str):
        return _fail(period)
    try:
        if args.command is None:
            return _tui(period)
        if args.command == "info":
            return _info(args)
        if args.command == "list":
            return _list(args)
        if args.command in ("run", "bench"):
            from gpulab.core.datadir import problem

            # Found before minutes of work, not after (the result would have nowhere to go).
            bad_dir = problem()
            if bad_dir:
                return _fail(bad_dir)
        if args.command == "run":
            return _run(args)
        if args.command == "bench":
            return _bench(args)
        if args.command == "lessons":
            return _lessons(args)
        if args.command == "store":
            from gpulab.store.recover import main as store_main

            return store_main(args)
        if args.command == "completion":
            from gpulab.completion import main as completion_main

            return completion_main(args)
        if args.command == "doctor":
            from gpulab.doctor.cli import main as doctor_main

            return doctor_main(args)
        if args.command == "history":
            from gpulab.history.cli import main as history_main

            return history_main(args)
        if args.command in ("exercises", "ex"):
            from gpulab.exercises.cli import main as exercises_main

            return exercises_main(args)
        if args.command == "serve":
            from gpulab.serve.cli import main as serve_main

            return serve_main(args, period if isinstance(period, float) else None)
    except KeyboardInterrupt:
        sys.stderr.write("gpulab: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    return _fail(f"unknown command {args.command!r}")


def sample_period(flag: str | None) -> float | None | str:
    """The telemetry period from --sample-period or the environment: seconds, None (the
    default), or a one-line error naming the flag (or variable), the value and the range."""
    import os

    name, raw = "--sample-period", flag
    if raw is None:
        name, raw = SAMPLE_PERIOD_ENV, os.environ.get(SAMPLE_PERIOD_ENV)
        if raw is None or not raw.strip():
            return None
    allowed = f"allowed: {SAMPLE_PERIOD_MIN:g} to {SAMPLE_PERIOD_MAX:g} seconds"
    try:
        value = parse_plain_number(raw)
    except ValueError:
        return f"{name} {shown(raw)} is not a number of seconds; {allowed}"
    if not SAMPLE_PERIOD_MIN <= value <= SAMPLE_PERIOD_MAX:
        return f"{name} {raw.strip()[:40]} is out of range; {allowed}"
    return value


def run_flags(device: str, timeout: str | None) -> tuple[int, float] | str:
    """`gpulab run`'s --device and --timeout: (device, seconds or 0 for none), or a one-line
    error. Whether the device exists is the worker's to say: it knows the GPUs."""
    try:
        index = parse_index(device)
    except ValueError:
        return f"--device {shown(device)} is not allowed; expected a GPU index: 0, 1, ..."
    if timeout is None:
        return index, 0.0
    allowed = f"expected seconds, more than 0 and at most {TIMEOUT_MAX_S:g}"
    try:
        seconds = parse_plain_number(timeout)
    except ValueError:
        return f"--timeout {shown(timeout)} is not a number of seconds; {allowed}"
    if not 0 < seconds <= TIMEOUT_MAX_S:
        return f"--timeout {timeout.strip()[:40]} is out of range; {allowed}"
    return index, seconds


def _tui(period: float | None = None) -> int:
    from gpulab.app import GpuLabApp

    app = GpuLabApp(sample_period=period)
    app.run()
    # Textual has printed the traceback by now; the status must say it too (a script, a CI job
    # or a shell's `&&` reads it).
    code = app.return_code or 0
    if code:
        sys.stderr.write("gpulab: the lab stopped on an internal error (traceback above)\n")
    return code


def _info(args: argparse.Namespace) -> int:
    from gpulab.core.devices import detect
    from gpulab.telemetry.cli import info_json, info_lines
    from gpulab.telemetry.sampler import TelemetryReader
    from gpulab.telemetry.values import card_memory, gib

    inv = detect()
    reader = TelemetryReader()
    try:
        frame = reader.read()
    finally:
        reader.close()
    nvml = frame.inventory.with_worker(inv.to_dict())
    if args.json:
        data = inv.to_dict()
        data["nvml"] = info_json(nvml, frame.snapshots)
        print(json.dumps(tagged("info", data), indent=2))
        return 0
    print(f"gpulab {__version__}")
    print(f"GPU: {inv.label()}")
    card_totals = {g.cuda_index: g.memory_total for g in nvml.gpus}
    for d in inv.devices:
        total = card_totals.get(d.index)
        memory = (
            card_memory(total, d.memory_total)
            if isinstance(total, int)
            else f"{gib(d.memory_total)} (CUDA's figure: NVML cannot read the card's)"
        )
        print(
            f"  cuda:{d.index}  {d.name}  cc {d.compute_capability}  {d.multiprocessors} SMs  "
            f"{memory}"
        )
    print("Backends:")
    for b in inv.backends.values():
        state = f"yes  {b.version}" if b.available else f"no   {b.reason}"
        print(f"  {b.name:<11} {state}")
    print("Versions: " + ", ".join(f"{k} {v}" for k, v in inv.versions.items() if v))
    for line in info_lines(nvml, frame.snapshots):
        print(line)
    return 0


def _list(args: argparse.Namespace) -> int:
    from gpulab.experiments.registry import all_experiments

    exps = all_experiments()
    if args.json:
        experiments = [e.describe() for e in exps.values()]
        print(json.dumps(tagged("list", {"experiments": experiments}), indent=2))
        return 0
    for exp in exps.values():
        print(f"{exp.id:<22} {exp.title}: {exp.summary}")
        for p in exp.params:
            default = ",".join(map(str, p.default)) if isinstance(p.default, list) else p.default
            print(f"    {p.name}={default}  ({p.allowed()}) {p.help}")
    return 0


def _validated(experiment: str, sets: list[str]) -> tuple[Any, dict[str, Any]] | str:
    """(experiment, params) or a one-line error."""
    from gpulab.core.params import ParamError, parse_assignments
    from gpulab.experiments.registry import UnknownExperiment, get

    try:
        exp = get(experiment)
        raw = parse_assignments(sets)
        return exp, exp.params.validate(raw)
    except (UnknownExperiment, ParamError, ValueError) as exc:
        return str(exc)


def _run(args: argparse.Namespace) -> int:
    checked = _validated(args.experiment, args.sets)
    if isinstance(checked, str):
        return _fail(checked)
    flags = run_flags(args.device, args.timeout)
    if isinstance(flags, str):
        return _fail(flags)
    exp, params = checked
    device, timeout = flags
    from gpulab.runner.cli import run_headless

    return run_headless(
        exp.id, params, as_json=args.json, device=device, timeout=timeout, plots=args.plot
    )


def _bench(args: argparse.Namespace) -> int:
    from gpulab.benchmark.suite import main as bench_main

    return bench_main(args)


def _lessons(args: argparse.Namespace) -> int:
    try:
        from gpulab.lessons.cli import main as lessons_main
    except ImportError:
        return _fail("the lessons are not installed in this build")
    return lessons_main(args)


if __name__ == "__main__":
    raise SystemExit(main())
