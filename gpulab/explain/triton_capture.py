"""The process that compiles a learner's Triton kernels for the static tier, with no GPU.

`python -m gpulab.explain.triton_capture --exercise ID --file PATH --arch sm_90` loads the
learner's file with Triton's interpreter off (so `@triton.jit` gives compilable functions),
builds the exercise check's timing inputs at the size a GPU times (on torch's "meta" device:
shapes, strides and dtypes, no memory; a data pointer of 0 is aligned as a CUDA allocation is),
and calls the learner's function once with `JITFunction.run` replaced: each launch is recorded,
not run. Each kernel is then compiled for the target from the launch's own arguments, so Triton
specialises it as the grader's call would (pointers 16-byte aligned, integers divisible by 16):
that decides its load widths. An autotuned kernel is compiled with its first config.

It prints one JSON object: `kernels` (each kernel's name, PTX, cubin, warps, dynamic shared
memory, grid, parameter names, the config explained, ptxas's -v log) and `notes` (one line each:
why something could not be explained). The learner's code and torch run here, never in the
caller (the UI process imports neither). Runs only in its own process; importing this module
imports nothing heavy.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

META = "meta"  # torch's device of shapes without memory


@dataclass
class Launch:
    """One launch the learner's function made: the kernel, its arguments and grid."""

    fn: Any  # triton.runtime.jit.JITFunction
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    grid: Any
    config: str = ""  # which autotune config it was given, "" for none


@dataclass
class Recorder:
    """The launches of one call, the first of each kernel kept."""

    launches: list[Launch] = field(default_factory=list)
    config: str = ""

    def add(self, launch: Launch) -> None:
        if all(x.fn is not launch.fn for x in self.launches):
            self.launches.append(launch)


@contextlib.contextmanager
def recording(rec: Recorder) -> Iterator[None]:
    """JITFunction.run (and Autotuner.run: its first config) record instead of launching."""
    from triton.runtime import autotuner, jit  # deferred: this process only

    run, tuned = jit.JITFunction.run, autotuner.Autotuner.run

    def record(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kw: Any) -> None:
        rec.add(Launch(self, args, kw, grid, rec.config))

    def first_config(self: Any, *args: Any, **kw: Any) -> Any:
        config = self.configs[0]
        knobs = ", ".join(f"{k}={v}" for k, v in config.all_kwargs().items() if v is not None)
        rec.config = f"the first of {len(self.configs)} autotune configs ({knobs})"
        try:
            return self.fn.run(*args, **kw, **config.all_kwargs())
        finally:
            rec.config = ""

    jit.JITFunction.run, autotuner.Autotuner.run = record, first_config
    try:
        yield
    finally:
        jit.JITFunction.run, autotuner.Autotuner.run = run, tuned


@contextlib.contextmanager
def compiled_not_interpreted() -> Iterator[None]:
    """Triton's interpreter off while the learner's file is loaded: `@triton.jit` then makes a
    JITFunction, which compiles, not an InterpretedFunction."""
    import triton  # deferred: this process only

    was = triton.knobs.runtime.interpret
    triton.knobs.runtime.interpret = False
    try:
        yield
    finally:
        triton.knobs.runtime.interpret = was


@contextlib.contextmanager
def meta_generators() -> Iterator[None]:
    """torch.Generator(device="meta") gives a CPU generator: a check seeds its inputs with one on
    its device, and torch's factories take a CPU generator for meta tensors."""
    import torch  # deferred: this process only

    real = torch.Generator

    class Generator(real):  # type: ignore[misc,valid-type]  # a class still: annotations use it
        def __new__(cls, device: Any = "cpu") -> Any:
            return real() if str(device) == META else real(device)

    torch.Generator = Generator  # type: ignore[misc]  # a class attribute of torch, swapped for the call
    try:
        yield
    finally:
        torch.Generator = real  # type: ignore[misc]  # put back as it was


def context(device: str, fill_bytes: int, quick: bool) -> Any:
    """The check Context of a GPU's timing run, its tensors on `device`."""
    import numpy as np

    from gpulab.exercises import api  # deferred: loaded when used

    return api.Context(
        rng=np.random.default_rng(1),
        seed=1,
        gpu=True,
        cupy=False,
        device=device,
        fill_bytes=fill_bytes,
        check_bytes=fill_bytes,
        quick=quick,
        phase="timing",
    )


def call_once(check: Any, fn: Callable[..., Any], ctx: Any) -> None:
    """The learner's function once on the check's timing inputs (its cases without timing)."""
    spec = check.timing(fn, ctx) if hasattr(check, "timing") else None
    if spec is not None:
        spec.learner(spec.setup(0))
        return
    ctx.phase = "cases"
    cases = list(check.cases(ctx))
    case = max(cases, key=lambda c: sum(getattr(v, "size", 1) for v in c.args.values()))
    check.run(fn, case, ctx)


def launches(exercise: str, path: Path) -> tuple[list[Launch], list[str]]:
    """The launches of one call of the learner's function, and notes on what went wrong."""
    from gpulab.exercises.job import GPU_FILL_BYTES  # deferred: loaded when used
    from gpulab.exercises.loader import find  # deferred: loaded when used
    from gpulab.exercises.run_check import load_check  # deferred: loaded when used
    from gpulab.exercises.sandbox import (  # deferred: loaded when used
        LearnerError,
        describe,
        load_learner,
    )

    ex = find(exercise)
    check = load_check(ex)
    try:
        with compiled_not_interpreted():
            _, fn = load_learner(path, ex.id, ex.entry)
    except LearnerError as exc:
        return [], [f"Triton: {exc}"]
    notes: list[str] = []
    # The timed size on meta tensors first (the grader's own integers); then a small one on the
    # CPU, for a function that needs its tensors' values
    for device, quick in ((META, False), ("cpu", True)):
        rec = Recorder()
        try:
            with meta_generators(), recording(rec):
                call_once(check, fn, context(device, GPU_FILL_BYTES, quick))
        except Exception as exc:  # noqa: BLE001 - the learner's code raised: one line
            if device == META:
                continue
            return [], [
                f"Triton: calling {ex.entry}() to see its launches raised {describe(exc, path)}"
            ]
        if device != META:
            notes.append(
                f"Triton: {ex.entry}() did not run on shapes alone; explained at a smaller"
                " size than the timed one (its grid and integer arguments differ)"
            )
        return rec.launches, notes
    return [], notes


def _grid(launch: Launch, bound: dict[str, Any]) -> list[int] | None:
    grid = launch.grid
    try:
        if callable(grid):
            grid = grid(bound)
        if isinstance(grid, int):
            grid = (grid,)
        return [int(g) for g in grid][:3]
    except Exception:  # noqa: BLE001 - a grid it cannot work out: the launch stays unknown
        return None


def compile_launch(launch: Launch, cc: int) -> dict[str, Any]:
    """One recorded launch compiled for compute capability `cc`, as JSON-ready data."""
    import triton  # deferred: this process only
    from triton.backends.compiler import GPUTarget  # deferred: this process only
    from triton.compiler import ASTSource, make_backend  # deferred: this process only
    from triton.compiler import compile as tcompile  # deferred: this process only
    from triton.runtime.jit import create_function_from_signature  # deferred: this process only

    fn = launch.fn
    target = GPUTarget("cuda", cc, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    kwargs = {
        **launch.kwargs,
        "debug": launch.kwargs.get("debug", fn.debug) or triton.knobs.runtime.debug,
        "instrumentation_mode": triton.knobs.compilation.instrumentation_mode,
    }
    bound, specialization, options = binder(*launch.args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(
        backend, kwargs, bound, specialization, options
    )
    c = tcompile(
        ASTSource(fn, signature, constexprs, attrs), target=target, options=options.__dict__
    )
    ptx, cubin = c.asm["ptx"], c.asm["cubin"]
    params = [name for name, kind in signature.items() if kind != "constexpr"]
    # What Triton could not assume of the call's arguments (its specialisation): a pointer not
    # 16-byte aligned, an integer not a multiple of 16 (a mask or stride it cannot vectorise by)
    values = list(bound.values())
    unaligned, indivisible = [], {}
    for i, (name, (kind, attr)) in enumerate(zip(signature, specialization, strict=False)):
        if kind.startswith("*") and attr != "D":
            unaligned.append(name)
        elif kind[:1] in "iu" and attr == "" and isinstance(values[i], int):
            indivisible[name] = values[i]
    return {
        "name": c.metadata.name,
        "function": fn.__name__,
        "file": fn.fn.__code__.co_filename,
        "ptx": ptx,
        "cubin": base64.b64encode(cubin).decode("ascii"),
        "num_warps": int(c.metadata.num_warps),
        "num_stages": int(getattr(c.metadata, "num_stages", 0) or 0),
        "shared": int(c.metadata.shared),
        "grid": _grid(launch, dict(bound)),
        "params": params,
        "unaligned": unaligned,
        "indivisible": indivisible,
        "config": launch.config,
        "ptxas": ptxas_log(ptx, c.metadata.target.arch),
        "triton": triton.__version__,
    }


def ptxas_log(ptx: str, cc: int) -> str:
    """ptxas -v's report of `ptx` (registers, spills), which Triton's compile does not keep; ""
    when Triton's ptxas cannot be run."""
    from triton import knobs  # deferred: this process only

    arch = f"sm_{cc}a" if cc >= 90 else f"sm_{cc}"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.ptx"
        src.write_text(ptx, encoding="utf-8")
        try:
            done = subprocess.run(
                [knobs.nvidia.ptxas.path, "-v", f"--gpu-name={arch}", str(src), "-o",
                 str(Path(tmp) / "kernel.cubin")],
                capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired, RuntimeError):
            return ""
    return done.stderr if done.returncode == 0 else ""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpulab.explain.triton_capture")
    p.add_argument("--exercise", required=True, help="the exercise whose check builds the inputs")
    p.add_argument("--file", required=True, help="the learner's file")
    p.add_argument("--cc", type=int, default=90, help="compute capability to compile for")
    args = p.parse_args(argv)
    path = Path(args.file).resolve()
    out: dict[str, Any] = {"kernels": [], "notes": []}
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # what the learner's code prints stays out of the JSON
    try:
        try:
            found, out["notes"] = launches(args.exercise, path)
        except ImportError as exc:  # no Triton (or torch) in this Python
            found, out["notes"] = [], [f"Triton kernels need triton and torch here ({exc})"]
        except Exception as exc:  # noqa: BLE001 - ours (a check that will not load): one line
            found, out["notes"] = [], [f"Triton: could not set up the call: {exc}"]
        if not found and not out["notes"]:
            out["notes"].append("Triton: your function launched no @triton.jit kernel")
        for launch in found:
            name = getattr(launch.fn, "__name__", "?")
            if launch.fn.fn.__code__.co_filename != str(path):
                continue  # a library's kernel, not the learner's
            try:
                out["kernels"].append(compile_launch(launch, args.cc))
            except Exception as exc:  # noqa: BLE001 - Triton refused it: one line for the card
                first = (str(exc).strip().splitlines() or [""])[-1][:200]
                out["notes"].append(
                    f"Triton could not compile {name}: {type(exc).__name__}: {first}"
                )
    finally:
        sys.stdout = real_stdout
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
