"""`gpulab ex explain NAME [--json] [--plot] [--arch sm_90] [--gpu] [--file PATH]`.

The card (80 columns), then the kernel's source numbered by file line with what was found beside
the lines that carry it (100 columns; `--json` gives the same per line).

Registered by gpulab/cli.py on `gpulab ex` (`register`, through gpulab.ex.cli.add_verb). Without `--gpu` it
imports neither torch nor CuPy: the GPU, when there is one, is named by NVML (its SM count and
compute capability), the graded figure comes from the progress store, and the ceilings from the
calibration cache (JSON), so the answer takes well under a second.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpulab.ex.cli import add_verb


def register(sub: Any) -> None:
    """`gpulab ex explain`, on the `ex` parser gpulab/cli.py registered (gpulab.ex.cli.add_verb),
    and `ex check --sanitize`, whose run is this package's (sanitize_cli.py)."""
    ex = sub.choices["exercises"]
    add_arguments(add_verb(ex, "explain", "why your kernel runs at its speed", cmd_explain))
    check = ex.get_default("ex_verbs").choices["check"]
    check.add_argument(
        "--sanitize",
        action="store_true",
        help="run your kernel under compute-sanitizer (memcheck, racecheck) instead of grading",
    )
    check.set_defaults(check_option=("sanitize", _sanitize))


def _sanitize(args: argparse.Namespace) -> int:
    from gpulab.explain.sanitize_cli import cmd_sanitize  # deferred: loaded when asked for

    return cmd_sanitize(args)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add `gpulab explain`'s arguments to `p`."""
    p.add_argument("name", nargs="?", help="exercise id, folder name or number")
    p.add_argument(
        "--experiment",
        metavar="ID",
        help="explain an experiment's own kernel instead (blur, reduction, montecarlo)",
    )
    p.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --experiment: a parameter of the experiment (its default otherwise)",
    )
    p.add_argument("--plot", action="store_true", help="draw your figure on the roofline")
    p.add_argument(
        "--arch", help="compile for this architecture: sm_80, sm_86, sm_89 or sm_90 (default:"
        " this GPU's, else sm_90)"
    )  # fmt: skip
    p.add_argument(
        "--gpu",
        action="store_true",
        help="ask this GPU's driver too (in your warm worker, which has CuPy loaded)",
    )
    p.add_argument("--file", metavar="PATH", help="explain this file instead of yours")
    p.add_argument(
        "--ncu",
        action="store_true",
        help="Tier 1: measure your kernel with Nsight Compute (one pass, about 10 s)",
    )


def cmd_explain(args: argparse.Namespace) -> int:
    """Run `gpulab explain`: compile the learner's kernels and print what limits them."""
    from gpulab.core.errors import BadInput  # deferred: loaded when the command runs
    from gpulab.ex.commands import (  # deferred: loaded when the command runs
        _file,
        catalog,
        emit_json,
    )
    from gpulab.explain import inputs  # deferred: loaded when the command runs
    from gpulab.explain.explainer import explain_file, tier1  # deferred: as above

    if args.experiment:
        return cmd_explain_experiment(args)
    if not args.name:
        raise BadInput("name an exercise, or an experiment with --experiment ID")
    ex = catalog().get(args.name)
    path = Path(args.file) if args.file else _file(args, ex)
    if not path.is_file():
        raise BadInput(f"no file {path}")
    index = getattr(args, "device", None) or 0
    if args.file:  # another file than the learner's: the learner's figure is not its figure
        given = inputs.machine(index, args.arch, ask_nvml=not args.gpu)
        given.exercise = ex
    else:
        given = inputs.for_attempt(ex, index, args.arch, ask_nvml=not args.gpu)
    device = inputs.device_answers(path, index, say=_say) if args.gpu else None
    e = explain_file(path, gpu=args.gpu, device=device, plot=args.plot, **given.kwargs())
    if args.ncu:
        tier1(e, ex.id, path, quiet=args.json)
    if args.json:
        emit_json({"explain": e.to_dict()})
    else:
        print("\n".join(e.card()))
        if not args.ncu:
            print(tier1_hint(ex.id))
        annotated = e.annotated()
        if annotated:
            print()
            print("\n".join(annotated))
    return 0


def _say(line: str) -> None:
    import sys  # deferred: loaded when the command runs

    sys.stderr.write(f"gpulab: {line}\n")


def cmd_explain_experiment(args: argparse.Namespace) -> int:
    """`gpulab ex explain --experiment ID`: the Tier 0 card of an experiment's own kernel."""
    from gpulab.core.errors import BadInput  # deferred: loaded when the command runs
    from gpulab.core.params import parse_assignments  # deferred: loaded when the command runs
    from gpulab.core.peaks import latest_gpu  # deferred: loaded when the command runs
    from gpulab.ex.commands import emit_json  # deferred: loaded when the command runs
    from gpulab.explain import inputs  # deferred: loaded when the command runs
    from gpulab.explain.experiment_kernels import explain_experiment  # deferred: as above

    if args.name:
        raise BadInput("give an exercise name or --experiment ID, not both")
    if args.ncu or args.file or args.plot:
        raise BadInput("--experiment gives the static card only (no --ncu, --file or --plot)")
    try:
        params = parse_assignments(args.sets)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    given = inputs.machine(getattr(args, "device", None) or 0, args.arch)
    kwargs: dict[str, Any] = {"card": given.card, "sms": given.sms}
    roof = inputs.default_roof(latest_gpu(given.card))
    if roof is not None:
        kwargs |= {"bandwidth_gbs": roof.bandwidth_gbs, "compute_tflops": roof.compute_tflops}
    # An unknown experiment, a bad parameter or one without a kernel: BadInput, one line.
    e = explain_experiment(args.experiment, params, arch=given.arch, **kwargs)
    if args.json:
        emit_json({"explain": e.to_dict()})
    else:
        print("\n".join(e.card()))
    return 0


def tier1_hint(exercise: str) -> str:
    """One line: what --ncu adds, or what to install for it."""
    from gpulab.core import nvtools  # deferred: loaded when the command runs

    if nvtools.find("ncu") is None:
        return (
            "Tier 1 (measured coalescing, bank conflicts, divergence, stalls) needs ncu: "
            + (nvtools.FIX["ncu"])
        )
    return f"measure it: gpulab ex explain {exercise} --ncu (Nsight Compute, about 10 s)"
