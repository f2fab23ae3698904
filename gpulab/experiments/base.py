"""The Experiment interface and the context an experiment runs in.

Experiments never know who runs them (the worker, a test, the CLI in-process): they get a
`Context` with progress, a cancellation check, the timer and a memory probe, and return a Result.
Modules here import torch and CuPy only inside `run`, so the registry loads in the UI process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gpulab import __version__
from gpulab.core import memory
from gpulab.core.devices import Inventory, cupy_hint
from gpulab.core.errors import Cancelled, GpulabError
from gpulab.core.judging import judge, rejudge
from gpulab.core.params import ParamSet
from gpulab.core.results import Measurement, Result, RunRecord
from gpulab.core.timing import Timer
from gpulab.experiments.wording import generic

CANCEL_POLL_S = 0.02  # how often a waiting experiment looks for a cancel


class ExperimentError(GpulabError):
    """A failure the experiment explains in one line (bad image file, size too large, ...)."""

    kind = "experiment-error"


class DoesNotFit(ExperimentError):
    """A size that would not fit in device memory, refused before anything is allocated."""

    kind = "does-not-fit"
    # Set by whoever raises it: the sizes asked for and free, sent with the failure.
    extra: dict[str, Any]


@dataclass(frozen=True)
class Contender:
    """One way of doing an experiment's work (a library, a device), with the backend it needs."""

    id: str
    label: str
    backend: str  # python | numpy | torch-cpu | torch-cuda | cupy
    help: str = ""


BACKEND_LABELS = {
    "python": "pure Python",
    "numpy": "NumPy",
    "scipy": "SciPy",
    "torch-cpu": "PyTorch on the CPU",
    "torch-cuda": "PyTorch on the GPU",
    "cupy": "CuPy",
}


@dataclass
class Context:
    """What a running experiment may use. Every callback is optional, so tests can build one bare."""

    inventory: Inventory = field(default_factory=Inventory)
    device_index: int = 0
    on_progress: Callable[[float, str], None] | None = None
    on_measurement: Callable[[Measurement], None] | None = None
    on_log: Callable[[str], None] | None = None
    is_cancelled: Callable[[], bool] | None = None
    timer_budget_s: float = 2.0
    timer_repeats: int = 20
    quick: bool = False  # tests: fewer repeats, smaller internal sweeps

    def __post_init__(self) -> None:
        self.timer = Timer(
            repeats=3 if self.quick else self.timer_repeats,
            budget_s=0.2 if self.quick else self.timer_budget_s,
            warmup=1 if self.quick else 2,
            cancel_check=self.check_cancelled,
        )

    @property
    def cancelled(self) -> bool:
        """True once the run was asked to stop."""
        return bool(self.is_cancelled and self.is_cancelled())

    def check_cancelled(self) -> None:
        """Raise Cancelled once the run was asked to stop."""
        if self.cancelled:
            raise Cancelled("cancelled")

    def blocks(self, n: int, step: int) -> Iterator[slice]:
        """slice(i, i + step) over range(n), checking for a cancel before each: long CPU work
        goes a block at a time so a cancel is taken within one block (well under 100 ms)."""
        for i in range(0, n, max(1, step)):
            self.check_cancelled()
            yield slice(i, min(n, i + step))

    def sleep(self, seconds: float) -> None:
        """time.sleep that a cancel ends within CANCEL_POLL_S."""
        end = time.perf_counter() + seconds
        while (left := end - time.perf_counter()) > 0:
            self.check_cancelled()
            time.sleep(min(CANCEL_POLL_S, left))
        self.check_cancelled()

    def progress(self, fraction: float, message: str = "") -> None:
        """Report progress (clamped to 0..1) and check for a cancel."""
        if self.on_progress:
            self.on_progress(max(0.0, min(1.0, float(fraction))), message)
        self.check_cancelled()

    def measurement(self, row: Measurement) -> None:
        """Emit a finished row. A row whose % of peak came from a calibrated ceiling is judged
        first (`judging.judge`): one that beats the ceiling by over 5% has it re-measured."""
        if getattr(row, "_ceiling", None) is not None:
            try:
                judge(self, row)
            except Cancelled:
                raise
            except Exception as exc:  # noqa: BLE001 - a failed re-check must not sink the run
                self.log(f"could not re-check the ceiling of a row: {type(exc).__name__}: {exc}")
        if self.on_measurement:
            self.on_measurement(row)

    def log(self, message: str) -> None:
        """Send a line to the run's log."""
        if self.on_log:
            self.on_log(message)

    def memory(self) -> dict[str, Any]:
        """Allocator and device memory as this process sees it now, in bytes (core.memory.probe)."""
        return memory.probe(self.device_index)

    @property
    def has_cuda(self) -> bool:
        """True when torch can use the GPU."""
        return self.inventory.available("torch-cuda")

    @property
    def has_cupy(self) -> bool:
        """True when CuPy can use the GPU."""
        return self.inventory.available("cupy")

    @property
    def torch_device(self) -> str:
        """The torch device string for this run: cuda:N, or cpu."""
        return f"cuda:{self.device_index}" if self.has_cuda else "cpu"

    def device_name(self) -> str:
        """The GPU's name, or a description of the CPU."""
        for d in self.inventory.devices:
            if d.kind == "cuda" and d.index == self.device_index:
                return d.name
        return self.cpu_name()

    def cpu_name(self) -> str:
        """A description of the CPU (the device of work that ran on it, GPUs or not)."""
        return f"CPU ({self.inventory.cpu or 'host'}, {self.inventory.cpu_count} cores)"


class Experiment:
    """Subclass and set the class attributes; implement `run`."""

    id: str = ""
    title: str = ""
    summary: str = ""
    lesson: str = ""  # lesson id for "what you just saw"
    params: ParamSet = ParamSet()
    contenders: tuple[Contender, ...] = ()
    # `gpulab bench`: the params each benchmark run uses; suites "core" (the three headline
    # experiments) and "full" (every experiment). Empty: not benchmarked.
    bench_params: tuple[dict[str, Any], ...] = ()
    bench_suites: tuple[str, ...] = ("full",)

    def availability(self, inventory: Inventory) -> dict[str, str]:
        """Contender id -> "" when it can run here, else why not (with the fix)."""
        out: dict[str, str] = {}
        for c in self.contenders:
            if c.backend in ("python", "numpy", "scipy"):
                out[c.id] = ""
            elif c.backend == "cupy" and not inventory.available("cupy"):
                reason = inventory.reason("cupy") or f"CuPy is not installed: {cupy_hint()}"
                out[c.id] = f"needs a GPU with CuPy: {reason}"
            elif c.backend in ("torch-cuda", "cupy") and not inventory.has_gpu:
                out[c.id] = f"needs a GPU: {inventory.gpu_reason or 'no GPU'}"
            elif c.backend in ("torch-cpu", "torch-cuda") and not inventory.available(c.backend):
                out[c.id] = inventory.reason(c.backend)
            else:
                out[c.id] = ""
        return out

    def check(self, params: dict[str, Any], inventory: Inventory) -> None:
        """Refuse params that cannot work on this machine before any work starts."""

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Do the work at `params` and return the Result; subclasses implement it."""
        raise NotImplementedError

    def new_result(self, ctx: Context, params: dict[str, Any]) -> Result:
        """An empty Result stamped with this run's experiment, params, device and versions."""
        versions = {k: v for k, v in ctx.inventory.versions.items() if v}
        result = Result(
            record=RunRecord(
                experiment=self.id,
                params=dict(params),
                device=ctx.device_name(),
                backend_versions=versions,
                gpulab_version=__version__,
            ),
            lesson=self.lesson,
        )
        result.unavailable = {k: v for k, v in self.availability(ctx.inventory).items() if v}
        return result

    def finish(self, result: Result) -> Result:
        """Stamp the end, judge every row again against its ceiling's final figure (a ceiling
        re-measured mid-run must not leave the rows before it on the old one), and answer."""
        rejudge(result)
        result.record.finished_at = time.time()
        result.headline = result.headline or self.answer(result)
        return result

    def headline(self, result: Result) -> str:
        """This experiment's one-line answer (`Result.headline`), from its own rows and summary:
        pi and its error, a speedup, a % of a ceiling. Each experiment says its own; this one,
        the fallback, names the fastest row. Empty: the run has too little to say."""
        return generic(self, result)

    def answer(self, result: Result) -> str:
        """`headline`, or the fastest row when it is empty or broken."""
        try:
            text = self.headline(result)
        except Exception:  # noqa: BLE001 - a missing figure must cost the line, never the run
            text = ""
        return text or generic(self, result)

    def describe(self) -> dict[str, Any]:
        """The experiment's id, texts, params and contenders as JSON-ready data."""
        return {
            "id": self.id,
            "title": self.title,
            "summary": self.summary,
            "lesson": self.lesson,
            "params": [p.to_dict() for p in self.params],
            "contenders": [
                {"id": c.id, "label": c.label, "backend": c.backend, "help": c.help}
                for c in self.contenders
            ],
        }
