"""The GPU's own answers about kernels, through CuPy: the device's limits, a kernel's attributes
and the driver's occupancy; and `kernel-device`, the hidden job that asks them in the worker.

`gpulab ex explain --gpu` asks them in the warm worker, which has CuPy loaded already
(gpulab.explain.inputs sends the kernels and their launches, `Recorded` holds the answers); with
no warm worker, the explainer asks them in its own process (`LOCAL`). tests/test_explain_gpu.py
checks the pure calculator against them. CuPy compiles with its own NVRTC and options, so its
register count can differ from ours by a few; its figures are the ones the learner's kernel ran
with. Importing this module imports no CuPy; it registers the job (`register_hidden`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from gpulab.core.params import ParamSet, Text
from gpulab.core.results import Result
from gpulab.experiments.base import Context, Experiment, ExperimentError
from gpulab.experiments.registry import register_hidden

EXPERIMENT_ID = "kernel-device"

_KERNELS: dict[tuple[str, str, tuple[str, ...]], Any] = {}


@dataclass
class GpuInfo:
    """The GPU explain measures on: name, SMs, arch and per-SM limits."""

    name: str
    sms: int
    arch: str  # sm_90
    max_threads_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    smem_per_sm: int
    smem_per_block_optin: int
    reserved_smem_per_block: int


def probe(index: int | None = None) -> GpuInfo:
    """The GpuInfo of CUDA device `index` (the current one by default), read through CuPy."""
    import cupy as cp  # deferred: a heavy dependency, and only for --gpu

    dev = cp.cuda.Device(index) if index is not None else cp.cuda.Device()
    attrs = dev.attributes
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props.get("name", b"GPU")
    return GpuInfo(
        name=name.decode() if isinstance(name, bytes) else str(name),
        sms=int(attrs["MultiProcessorCount"]),
        arch=f"sm_{dev.compute_capability}",
        max_threads_per_sm=int(attrs.get("MaxThreadsPerMultiProcessor", 2048)),
        max_blocks_per_sm=int(attrs.get("MaxBlocksPerMultiprocessor", 32)),
        regs_per_sm=int(attrs.get("MaxRegistersPerMultiprocessor", 65536)),
        smem_per_sm=int(attrs.get("MaxSharedMemoryPerMultiprocessor", 0)),
        smem_per_block_optin=int(attrs.get("MaxSharedMemoryPerBlockOptin", 0)),
        reserved_smem_per_block=int(props.get("reservedSharedMemPerBlock", 1024)),
    )


def kernel(code: str, name: str, options: tuple[str, ...] = ()) -> Any:
    """A CuPy RawKernel for `code`, compiled once per process."""
    import cupy as cp  # deferred: a heavy dependency, and only for --gpu

    key = (code, name, tuple(options))
    if key not in _KERNELS:
        _KERNELS[key] = cp.RawKernel(code, name, options=tuple(options))
    return _KERNELS[key]


def attributes(code: str, name: str, options: tuple[str, ...] = ()) -> dict[str, int] | None:
    """CuPy's `RawKernel.attributes` (num_regs, shared_size_bytes, local_size_bytes,
    max_threads_per_block, ...), or None when it will not compile or load here."""
    try:
        return {k: int(v) for k, v in kernel(code, name, options).attributes.items()}
    except Exception:  # noqa: BLE001 - a kernel CuPy cannot load: the NVRTC figures stand
        return None


def occupancy(
    code: str, name: str, options: tuple[str, ...], block: int, shared_dynamic: int = 0
) -> int | None:
    """Blocks per SM from cuOccupancyMaxActiveBlocksPerMultiprocessor, or None."""
    import cupy as cp  # deferred: a heavy dependency, and only for --gpu

    try:
        k = kernel(code, name, options)
        fn = k.kernel if hasattr(k, "kernel") else k
        return int(
            cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
                fn.ptr, int(block), int(shared_dynamic)
            )
        )
    except Exception:  # noqa: BLE001 - an older CuPy without the call: the computed figure stands
        return None


class Answers(Protocol):
    """Where the explainer's --gpu figures come from: this process, or the worker's record."""

    def probe(self, index: int | None = None) -> GpuInfo:
        """The device's limits; raises when there is no GPU to ask."""

    def attributes(
        self, code: str, name: str, options: tuple[str, ...] = ()
    ) -> dict[str, int] | None:
        """A kernel's attributes, or None."""

    def occupancy(
        self, code: str, name: str, options: tuple[str, ...], block: int, shared_dynamic: int = 0
    ) -> int | None:
        """Blocks per SM, or None."""


class _Local:
    """The answers of this process's own CUDA device (CuPy imported on the first question)."""

    def probe(self, index: int | None = None) -> GpuInfo:
        return probe(index)

    def attributes(
        self, code: str, name: str, options: tuple[str, ...] = ()
    ) -> dict[str, int] | None:
        return attributes(code, name, options)

    def occupancy(
        self, code: str, name: str, options: tuple[str, ...], block: int, shared_dynamic: int = 0
    ) -> int | None:
        return occupancy(code, name, options, block, shared_dynamic)


LOCAL: Answers = _Local()


def question_key(code: str, name: str, options: tuple[str, ...] | list[str]) -> str:
    """One kernel's key among the answers."""
    return json.dumps([code, name, list(options)])


class Recorded:
    """The answers the worker gave to `kernel-device` (its result's summary), or why it gave
    none (`probe` raises with it)."""

    def __init__(self, summary: dict[str, Any] | None, why: str = "") -> None:
        summary = summary or {}
        self.gpu = GpuInfo(**summary["gpu"]) if summary.get("gpu") else None
        self.why = why or "the worker gave no answer"
        self.by_key = {a["key"]: a for a in summary.get("answers", [])}

    def probe(self, index: int | None = None) -> GpuInfo:
        if self.gpu is None:
            raise RuntimeError(self.why)
        return self.gpu

    def attributes(
        self, code: str, name: str, options: tuple[str, ...] = ()
    ) -> dict[str, int] | None:
        found = self.by_key.get(question_key(code, name, options)) or {}
        return found.get("attributes")

    def occupancy(
        self, code: str, name: str, options: tuple[str, ...], block: int, shared_dynamic: int = 0
    ) -> int | None:
        found = self.by_key.get(question_key(code, name, options)) or {}
        asked = (found.get("block"), found.get("shared_dynamic") or 0)
        return found.get("occupancy") if asked == (block, shared_dynamic or 0) else None


class KernelDevice(Experiment):
    """The hidden job: a GPU's limits, and each kernel's attributes and occupancy at its launch."""

    id = EXPERIMENT_ID
    title = "Kernel device figures"
    summary = "The driver's figures of a learner's kernels (gpulab ex explain --gpu)"
    params = ParamSet(
        (
            Text(
                "questions",
                "[]",
                "JSON: a list of {code, name, options, block, shared_dynamic}",
            ),
        )
    )

    def check(self, params: dict[str, Any], inventory: Any) -> None:
        """Refuse without CuPy on a GPU: there is no driver to ask."""
        if not inventory.available("cupy"):
            raise ExperimentError(f"needs CuPy on a GPU: {inventory.reason('cupy') or 'no GPU'}")

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Ask the driver every question; the answers are the result's summary."""
        result = self.new_result(ctx, params)
        try:
            questions = json.loads(params["questions"])
        except ValueError as exc:
            raise ExperimentError(f"questions are not JSON: {exc}") from None
        answers = []
        for q in questions:
            options = tuple(q.get("options") or ())
            block, shared = q.get("block"), int(q.get("shared_dynamic") or 0)
            answers.append(
                {
                    "key": question_key(q["code"], q["name"], options),
                    "attributes": attributes(q["code"], q["name"], options),
                    "block": block,
                    "shared_dynamic": shared,
                    "occupancy": occupancy(q["code"], q["name"], options, block, shared)
                    if block
                    else None,
                }
            )
        result.summary = {"gpu": asdict(probe(ctx.device_index)), "answers": answers}
        result.headline = result.explanation = f"{len(answers)} kernels asked"
        return self.finish(result)


EXPERIMENT = KernelDevice()
register_hidden(EXPERIMENT)
