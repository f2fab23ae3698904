"""`gpulab ex explain NAME [--json] [--plot] [--arch sm_90] [--gpu] [--file PATH]`.

Registered by gpulab/cli.py on `gpulab ex` (`register`, through exercises.cli.add_verb). Without `--gpu` it
imports neither torch nor CuPy: the GPU, when there is one, is named by NVML (its SM count and
compute capability), the graded figure comes from the progress store, and the ceilings from the
calibration cache (JSON), so the answer takes well under a second.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
from pathlib import Path
from typing import Any

from gpulab.ex.cli import add_verb

CORES_PER_SM = {8: 64, 9: 128}  # FP32 cores an SM has (sm_80: 64; sm_86, sm_89, sm_90: 128)


def register(sub: Any) -> None:
    """`gpulab ex explain`, on the `ex` parser gpulab/cli.py registered (exercises.cli.add_verb)."""
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
        "--gpu", action="store_true", help="ask this GPU's driver too (imports CuPy: slower)"
    )
    p.add_argument("--file", metavar="PATH", help="explain this file instead of yours")
    p.add_argument(
        "--ncu",
        action="store_true",
        help="Tier 1: measure your kernel with Nsight Compute (one pass, about 10 s)",
    )


def nvml_gpu(index: int = 0) -> dict[str, Any] | None:
    """{"name", "sms", "arch"} of GPU `index` from NVML, or None (no driver, no GPU)."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver: no GPU to describe
        return None
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        name = pynvml.nvmlDeviceGetName(h)
        name = name.decode() if isinstance(name, bytes) else str(name)
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
        sms = None
        with contextlib.suppress(Exception):
            cores = int(pynvml.nvmlDeviceGetNumGpuCores(h))
            per = 64 if (major, minor) == (8, 0) else CORES_PER_SM.get(major, 128)
            sms = cores // per if cores else None
        return {"name": name, "sms": sms, "arch": f"sm_{major}{minor}"}
    except Exception:  # noqa: BLE001 - NVML without the calls (MIG, old driver)
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def calibration(card: str | None) -> Any:
    """This machine's GPU calibration (gpulab.core.peaks.Peaks) from the JSON cache: the one
    whose device is `card`, else the most recent GPU one; None when there is none."""
    from gpulab.core import peaks as pk  # deferred: loaded when the command runs

    folder = pk.data_dir() / "peaks"
    best = None
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            p = pk.Peaks.from_dict(json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue
        if p.cpu or p.quick:
            continue
        rank = (bool(card) and p.device == card, p.measured_at)
        if best is None or rank > best[0]:
            best = (rank, p)
    return best[1] if best else None


def ceiling_name(check_path: Path, metric: str) -> str:
    """The ceiling the check grades against: `ceiling=` in its timing spec, else by metric."""
    with contextlib.suppress(OSError, SyntaxError):
        tree = ast.parse(check_path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.keyword)
                and node.arg == "ceiling"
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                return node.value.value
    return "copy" if metric == "GB/s" else "matmul:fp32"


def graded_fraction(exercise_id: str) -> float | None:
    """The fraction of the ceiling of the learner's latest graded attempt, from the store."""
    from gpulab.ex.commands import store  # deferred: loaded when the command runs
    from gpulab.exercises.progress import Progress  # deferred: loaded when the command runs

    with store() as st:
        for a in Progress(st).attempts(exercise_id, limit=20):
            if a.fraction:
                return float(a.fraction)
    return None


def _arch_and_card(args: Any, gpu: dict[str, Any] | None) -> tuple[str | None, dict[str, Any]]:
    """The architecture to compile for (`--arch`, else this card's when known) and the card's
    name and SM count for the explainer; an unknown `--arch` is bad input."""
    from gpulab.core.errors import BadInput  # deferred: loaded when the command runs
    from gpulab.explain import arch as arches  # deferred: loaded when the command runs

    arch = args.arch or (gpu["arch"] if gpu and gpu["arch"] in arches.ARCHS else None)
    try:
        arches.get(arch)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    kwargs: dict[str, Any] = {}
    if gpu:
        kwargs |= {"card": gpu["name"], "sms": gpu["sms"]}
    return arch, kwargs


def cmd_explain(args: argparse.Namespace) -> int:
    """Run `gpulab explain`: compile the learner's kernels and print what limits them."""
    from gpulab.core.errors import BadInput  # deferred: loaded when the command runs
    from gpulab.ex.commands import (  # deferred: loaded when the command runs
        _file,
        catalog,
        emit_json,
    )
    from gpulab.explain.explainer import explain_file  # deferred: loaded when the command runs

    if args.experiment:
        return cmd_explain_experiment(args)
    if not args.name:
        raise BadInput("name an exercise, or an experiment with --experiment ID")
    ex = catalog().get(args.name)
    path = Path(args.file) if args.file else _file(args, ex)
    if not path.is_file():
        raise BadInput(f"no file {path}")
    gpu = None if args.gpu else nvml_gpu(getattr(args, "device", None) or 0)
    arch, kwargs = _arch_and_card(args, gpu)
    if ex.metric in ("GB/s", "TFLOP/s") and not args.file:
        fraction = None
        with contextlib.suppress(Exception):  # a store another process holds: no figure
            fraction = graded_fraction(ex.id)
        peaks = calibration(gpu["name"] if gpu else None) if fraction else None
        if peaks is not None and fraction is not None:
            from gpulab.core.peaks import peak_for  # deferred: loaded when the command runs

            name = ceiling_name(ex.check_path, ex.metric)
            ceiling = peak_for(peaks, name)
            compute = peak_for(peaks, name if name.startswith("matmul:") else "matmul:fp32")
            bandwidth = peak_for(peaks, "copy")
            if ceiling and compute and bandwidth:
                kwargs |= {
                    "figure": fraction * float(ceiling),
                    "bandwidth_gbs": float(bandwidth),
                    "compute_tflops": float(compute),
                    "compute_name": name if name.startswith("matmul:") else "matmul:fp32",
                }
                if not gpu:
                    kwargs.setdefault("card", peaks.device)
    e = explain_file(
        path,
        exercise=ex.id,
        metric=ex.metric,
        arch=arch,
        gpu=args.gpu,
        plot=args.plot,
        check_path=ex.check_path,
        **kwargs,
    )
    if args.ncu:
        tier1(e, ex.id, path, quiet=args.json)
    if args.json:
        emit_json({"explain": e.to_dict()})
    else:
        print("\n".join(e.card()))
        if not args.ncu:
            print(tier1_hint(ex.id))
    return 0


def cmd_explain_experiment(args: argparse.Namespace) -> int:
    """`gpulab ex explain --experiment ID`: the Tier 0 card of an experiment's own kernel."""
    from gpulab.core.errors import BadInput  # deferred: loaded when the command runs
    from gpulab.core.params import parse_assignments  # deferred: loaded when the command runs
    from gpulab.ex.commands import emit_json  # deferred: loaded when the command runs
    from gpulab.explain.experiment_kernels import explain_experiment  # deferred: as above

    if args.name:
        raise BadInput("give an exercise name or --experiment ID, not both")
    if args.ncu or args.file or args.plot:
        raise BadInput("--experiment gives the static card only (no --ncu, --file or --plot)")
    try:
        params = parse_assignments(args.sets)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    gpu = nvml_gpu(getattr(args, "device", None) or 0)
    arch, kwargs = _arch_and_card(args, gpu)
    peaks = calibration(gpu["name"] if gpu else None)
    if peaks is not None:
        from gpulab.core.peaks import peak_for  # deferred: loaded when the command runs

        bandwidth, compute = peak_for(peaks, "copy"), peak_for(peaks, "matmul:fp32")
        if bandwidth and compute:
            kwargs |= {"bandwidth_gbs": float(bandwidth), "compute_tflops": float(compute)}
    # An unknown experiment, a bad parameter or one without a kernel: BadInput, one line.
    e = explain_experiment(args.experiment, params, arch=arch, **kwargs)
    if args.json:
        emit_json({"explain": e.to_dict()})
    else:
        print("\n".join(e.card()))
    return 0


def tier1_hint(exercise: str) -> str:
    """One line: what --ncu adds, or what to install for it."""
    from gpulab.explain import tools  # deferred: loaded when the command runs

    if tools.find("ncu") is None:
        return (
            "Tier 1 (measured coalescing, bank conflicts, divergence, stalls) needs ncu: "
            + (tools.FIX["ncu"])
        )
    return f"measure it: gpulab ex explain {exercise} --ncu (Nsight Compute, about 10 s)"


def tier1(
    e: Any,
    exercise: str,
    path: Path,
    *,
    quiet: bool = False,
    on_progress: Any = None,
    cancel: Any = None,
) -> Any:
    """Run the ncu pass over the kernels Tier 0 found in `path` and add it to `e` (a note says
    why not, and Tier 0 stays, when there is no ncu or no permission)."""
    import sys  # deferred: loaded when used

    from gpulab.explain import ncu, tools  # deferred: loaded when the command runs
    from gpulab.explain.explainer import add_profile  # deferred: loaded when the command runs

    kernels = [k.name for k in e.kernels if not k.error]
    if not kernels:
        e.notes.append("Tier 1: no kernel of yours compiles, so there is nothing to profile")
        return e
    say = on_progress or (None if quiet else (lambda s: print(f"  {s}", file=sys.stderr)))
    try:
        prof = ncu.profile(
            kernels, tools.target_argv(path, exercise=exercise), on_progress=say, cancel=cancel
        )
    except ncu.NoPermission as exc:  # one line: what an admin changes; Tier 0 stands
        e.notes.append(str(exc))
        return e
    except (ncu.NcuError, TimeoutError) as exc:
        e.notes.append(f"Tier 1: {exc}")
        return e
    return add_profile(e, prof)
