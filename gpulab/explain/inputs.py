"""What an explain card is drawn from, gathered in one place for `gpulab ex explain` and the TUI.

- the GPU, from NVML (its name, SM count and architecture; no CUDA library is loaded);
- this machine's calibrated ceilings, from the JSON cache of gpulab.core.peaks;
- the graded figure: a check's own timing (the TUI, after a check), or the learner's latest
  graded attempt in the progress store (the CLI);
- the exercise's facts (metric, ceiling, intensity: gpulab.exercises.loader.Exercise);
- with `--gpu`, the driver's own figures of the learner's kernels, asked in the learner's warm
  worker (gpulab.runner.warm), which has CuPy loaded already.

`CardInputs.kwargs()` is what `explainer.explain_file` takes, so the two front ends cannot drift.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.core import events as ev
from gpulab.core import peaks as pk
from gpulab.core.errors import BadInput
from gpulab.exercises.loader import Exercise
from gpulab.experiments.kernel_device import EXPERIMENT_ID, Answers, Recorded
from gpulab.explain import arch as arches
from gpulab.explain.roofline import Roof

CORES_PER_SM = {8: 64, 9: 128}  # FP32 cores an SM has (sm_80: 64; sm_86, sm_89, sm_90: 128)


@dataclass(frozen=True)
class Gpu:
    """A GPU as NVML names it: enough for the static tier's occupancy and waves."""

    name: str
    sms: int | None
    arch: str  # sm_90


def gpu(index: int = 0) -> Gpu | None:
    """GPU `index` from NVML, or None (no driver, no GPU, a driver without the calls)."""
    from gpulab.telemetry.nvml import NvmlSession, text  # deferred: loaded when used
    from gpulab.telemetry.values import NA  # deferred: loaded when used

    session = NvmlSession()
    if not session.open():
        return None
    try:
        name = session.call(index, "nvmlDeviceGetName")
        cc = session.call(index, "nvmlDeviceGetCudaComputeCapability")
        cores = session.call(index, "nvmlDeviceGetNumGpuCores")
    finally:
        session.close()
    if isinstance(name, NA) or isinstance(cc, NA):
        return None
    major, minor = int(cc[0]), int(cc[1])
    sms = None
    if not isinstance(cores, NA) and cores:
        per = 64 if (major, minor) == (8, 0) else CORES_PER_SM.get(major, 128)
        sms = int(cores) // per
    return Gpu(text(name), sms, f"sm_{major}{minor}")


def roof_for(ex: Exercise, peaks: Any) -> tuple[float | None, Roof | None]:
    """(the exercise's own ceiling, the roofline's two roofs) from a calibration; None for what
    the calibration lacks. A figure graded in GB/s sits under the bandwidth it is graded against
    (copy, or h2d for a transfer); the compute roof is the exercise's matmul dtype, else fp32."""
    if not ex.graded_by_speed or peaks is None:
        return None, None
    bandwidth_name = ex.ceiling if ex.metric == "GB/s" else "copy"
    compute_name = ex.ceiling if ex.ceiling.startswith("matmul:") else "matmul:fp32"
    ceiling = pk.peak_for(peaks, ex.ceiling)
    bandwidth, compute = pk.peak_for(peaks, bandwidth_name), pk.peak_for(peaks, compute_name)
    roof = None
    if bandwidth and compute:
        roof = Roof(float(bandwidth), float(compute), bandwidth_name, compute_name)
    return (float(ceiling) if ceiling else None), roof


def default_roof(peaks: Any) -> Roof | None:
    """The copy and fp32 matmul roofs of a calibration (an experiment's kernel), or None."""
    if peaks is None:
        return None
    bandwidth, compute = pk.peak_for(peaks, "copy"), pk.peak_for(peaks, "matmul:fp32")
    return Roof(float(bandwidth), float(compute)) if bandwidth and compute else None


def graded_fraction(exercise_id: str) -> float | None:
    """The fraction of the ceiling of the learner's latest graded attempt, from the store."""
    from gpulab.ex.commands import store  # deferred: loaded when used
    from gpulab.exercises.progress import Progress  # deferred: loaded when used

    with store() as st:
        for a in Progress(st).attempts(exercise_id, limit=20):
            if a.fraction:
                return float(a.fraction)
    return None


@dataclass
class CardInputs:
    """Everything but the file that explain_file needs for one exercise's card."""

    exercise: Exercise | None = None
    arch: str | None = None  # compile for this; None: the explainer's default (sm_90)
    card: str | None = None
    sms: int | None = None
    figure: float | None = None  # the graded figure, in the exercise's metric
    roof: Roof | None = None

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for explainer.explain / explain_file."""
        out: dict[str, Any] = {"arch": self.arch, "card": self.card, "sms": self.sms}
        ex = self.exercise
        if ex is not None:
            out |= {"exercise": ex.id, "metric": ex.metric, "intensity": ex.intensity}
        if self.figure is not None and self.roof is not None:
            out |= {"figure": self.figure, "roof": self.roof}
        return out


def machine(index: int = 0, arch: str | None = None, *, ask_nvml: bool = True) -> CardInputs:
    """The GPU part of a card: `arch` (else this GPU's when the explainer knows it), the card's
    name and SM count from NVML; BadInput for an architecture the explainer does not know."""
    found = gpu(index) if ask_nvml else None
    chosen = arch or (found.arch if found and found.arch in arches.ARCHS else None)
    try:
        arches.get(chosen)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    if found is None:
        return CardInputs(arch=chosen)
    return CardInputs(arch=chosen, card=found.name, sms=found.sms)


def for_attempt(
    ex: Exercise, index: int = 0, arch: str | None = None, *, ask_nvml: bool = True
) -> CardInputs:
    """The card of `gpulab ex explain NAME`: this GPU, and the learner's latest graded figure
    (its fraction in the store times this GPU's calibrated ceiling) on the roofline."""
    out = machine(index, arch, ask_nvml=ask_nvml)
    out.exercise = ex
    if not ex.graded_by_speed:
        return out
    fraction = None
    with contextlib.suppress(Exception):  # a store another process holds: no figure
        fraction = graded_fraction(ex.id)
    if fraction is None:
        return out
    peaks = pk.latest_gpu(out.card)
    ceiling, roof = roof_for(ex, peaks)
    if ceiling and roof is not None:
        out.figure, out.roof = fraction * ceiling, roof
        if out.card is None and peaks is not None:
            out.card = peaks.device
    return out


def for_check(ex: Exercise, timing: dict[str, Any]) -> CardInputs:
    """The card under a graded check in the TUI: this GPU, and the check's own figure (its
    learner value) under the ceilings calibrated on the device the check ran on."""
    out = machine(0)
    out.exercise = ex
    value = (timing.get("learner") or {}).get("value")
    if not value:
        return out
    device = (timing.get("ceiling") or {}).get("device")
    _ceiling, roof = roof_for(ex, pk.latest_gpu(device))
    if roof is not None:
        out.figure, out.roof = float(value), roof
    return out


def device_answers(
    path: Path, index: int = 0, say: Callable[[str], None] | None = None
) -> Answers | None:
    """The driver's figures of the kernels in `path` (`--gpu`), asked in the learner's warm
    worker, which is started (and `say` told so) when there is none; None when commands start
    no warm worker (GPULAB_WARM_WORKER=0): the explainer then asks in this process."""
    import asyncio  # deferred: loaded when used

    from gpulab.explain.explainer import device_questions  # deferred: loaded when used
    from gpulab.runner.warm.remote import warm_client  # deferred: loaded when used

    client = warm_client(index, say)
    if client is None:
        return None
    questions = device_questions(path.read_text(encoding="utf-8"))

    async def ask() -> dict[str, Any]:
        job = await client.submit(EXPERIMENT_ID, {"questions": json.dumps(questions)}, device=index)
        return await job.wait()

    try:
        final = asyncio.run(ask())
    except (ConnectionError, FileNotFoundError) as exc:
        return Recorded(None, f"the warm worker did not answer ({exc})")
    if final.get("type") == ev.RESULT:
        return Recorded((final.get("result") or {}).get("summary"))
    return Recorded(None, str(final.get("message") or final.get("type")))
