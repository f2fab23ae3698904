"""explain() and explain_file(): the static tier for a learner's file (see __init__.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpulab.core import nvrtc
from gpulab.exercises.exercise_format import SPEED_METRICS
from gpulab.exercises.intensity import Intensity
from gpulab.experiments import kernel_device
from gpulab.explain import arch as arches
from gpulab.explain import cubin, diagnose, ptx, roofline, triton_kernels
from gpulab.explain.findings import Explanation, Finding, KernelReport
from gpulab.explain.source import KernelSource, LaunchSite, scan


def _as_tuple(v: Any) -> tuple[int, ...] | None:
    if v is None:
        return None
    if isinstance(v, int):
        return (int(v),)
    try:
        return tuple(int(x) for x in v)
    except (TypeError, ValueError):
        return None


def _pick_launch(
    name: str, records: Sequence[Any] | None, sites: list[LaunchSite]
) -> diagnose.Launch | None:
    """The grader's record of this kernel's largest launch, else the source's launch site."""
    mine = [r for r in records or () if getattr(r, "kernel", None) == name]
    best = None
    for r in mine:
        grid, block = _as_tuple(getattr(r, "grid", None)), _as_tuple(getattr(r, "block", None))
        if not grid or not block:
            continue
        size = 1
        for g in grid:
            size *= g
        if best is None or size > best[0]:
            best = (size, grid, block, int(getattr(r, "shared_dynamic", 0) or 0))
    if best is not None:
        _, grid, block, shared = best
        return diagnose.Launch(block, grid, shared, "measured")
    for s in sites:
        if s.kernel == name:
            return diagnose.Launch(s.block, s.grid, s.shared_mem or 0, "estimated", s.line)
    return None


def device_for(arch_name: str | None, sms: int | None, card: str | None) -> diagnose.Device:
    """The device the findings assume: `arch_name` with the GPU's SM count when known, else the
    count of `card`, else the architecture's usual card (estimated)."""
    a = arches.get(arch_name)
    if sms:
        return diagnose.Device(a, sms, card or "this GPU", "measured")
    if card:
        found = arches.sms_for_card(card)
        if found:
            return diagnose.Device(a, found, card, "estimated")
    return diagnose.Device(a, a.sms, f"assumed {a.card}", "estimated")


def explain(
    text: str,
    *,
    exercise: str = "",
    filename: str = "",
    arch: str | None = None,
    launches: Sequence[Any] | None = None,
    metric: str | None = None,
    figure: float | None = None,
    roof: roofline.Roof | None = None,
    intensity: Intensity | None = None,
    sms: int | None = None,
    card: str | None = None,
    gpu: bool = False,
    device: kernel_device.Answers | None = None,
    plot: bool = False,
    path: Path | None = None,
) -> Explanation:
    """Explain every RawKernel / RawModule kernel and every Triton kernel in a learner's file.

    `launches`: the grader's records (objects with kernel, grid, block, shared_dynamic, like
    own_work.Launch); without them the launch in the source is used ("estimated"). `metric`
    is the exercise's (GB/s or TFLOP/s). `figure` on this GPU's `roof`, at the exercise's
    `intensity`, is the roofline point. `sms`/`card`: the GPU, when known; else the
    architecture's usual card. gpulab.explain.inputs gathers all of these for an exercise.
    `gpu`: ask the GPU's driver too, through `device` (the warm worker's answers) or in this
    process (CuPy). `path`: the file itself, which Triton kernels are compiled from
    (triton_kernels.py: its function is called once on the exercise's timed inputs).
    """
    t0 = time.perf_counter()
    dev = device_for(arch, sms, card)
    gpu_info: Any = None
    note = ""
    answers = (device or kernel_device.LOCAL) if gpu else None
    if answers is not None:
        try:
            gpu_info = answers.probe()
        except Exception as exc:  # noqa: BLE001 - no CuPy, no GPU: the static tier still answers
            gpu_info = None
            note = f"--gpu: could not ask the GPU ({type(exc).__name__}: {exc}); static figures"
    if gpu_info is not None:
        dev = diagnose.Device(
            arches.get(gpu_info.arch) if gpu_info.arch in arches.ARCHS else dev.arch,
            gpu_info.sms,
            gpu_info.name,
            "measured",
        )
    where = (
        f"{dev.name}, {dev.sms} SMs"
        if dev.sms_source == "measured"
        else f"{dev.name} ({dev.sms} SMs)"
    )
    out = Explanation(exercise, filename, dev.arch.name, where)
    if note:
        out.notes.append(note)
    found = scan(text, sms=dev.sms, filename=filename or "your file")
    out.notes += found.notes
    for ks in found.kernels:
        if ks.code_line is not None:
            for i, code in enumerate(ks.code.split("\n")):
                out.source[ks.code_line + i] = code
    jitted = triton_kernels.jit_functions(text)
    for jf in jitted:
        lines = text.split("\n")
        for n in range(jf.first, jf.last + 1):
            out.source[n] = lines[n - 1] if n <= len(lines) else ""
    if not found.kernels and not found.notes and not jitted:
        out.notes.append(
            "no RawKernel, RawModule or @triton.jit kernel in this file: nothing to compile"
        )
    if figure is not None and metric and roof is not None:
        p = roofline.point(exercise, metric, figure, roof, intensity)
        if p is not None:
            out.figure = _figure_finding(p)
            if plot:
                out.plot = roofline.plot(p)
        else:
            out.notes.append(f"no declared FLOPs and bytes for {exercise or 'this exercise'}")
    elif metric in SPEED_METRICS:
        out.notes.append("no graded figure yet: check it on a GPU to place it on the roofline")
    compiled: dict[tuple[str, tuple[str, ...]], Any] = {}
    for ks in found.kernels:
        key = (ks.code, ks.options)
        if key not in compiled:
            try:
                compiled[key] = nvrtc.compile_source(ks.code, dev.arch.name, ks.options)
            except nvrtc.NvrtcMissing as exc:
                out.notes.append(str(exc))
                break
        out.kernels.append(
            kernel_report(
                ks,
                compiled[key],
                dev,
                found.launches,
                launches,
                metric,
                answers if gpu_info is not None else None,
            )
        )
    if jitted:
        _explain_triton(out, jitted, path, exercise, dev, metric)
    _quiet_vector_advice_near_the_copy(out)
    out.seconds = time.perf_counter() - t0
    return out


def _explain_triton(
    out: Explanation,
    jitted: list[triton_kernels.JitFunction],
    path: Path | None,
    exercise: str,
    dev: diagnose.Device,
    metric: str | None,
) -> None:
    """The Triton kernels of the file, compiled from one call of the learner's function on the
    exercise's timed inputs, each reported as a CUDA C kernel is."""
    if path is None or not exercise:
        out.notes.append(
            "Triton kernels are compiled from a call of your function on an exercise's inputs:"
            " explain the file under its exercise (gpulab ex explain NAME)"
        )
        return
    kernels, notes = triton_kernels.capture(path, exercise, dev.arch.major * 10 + dev.arch.minor)
    out.notes += notes
    by_name = {jf.name: jf for jf in jitted}
    for k in kernels:
        if k.config:
            out.notes.append(f"Triton: {k.function} explained with {k.config}")
        out.kernels.append(triton_kernels.report(k, by_name.get(k.function), dev, metric))


NEAR_COPY = 0.8  # of the copy roof: wider loads have little left to win above it


def _quiet_vector_advice_near_the_copy(out: Explanation) -> None:
    """A memory-bound figure already near the copy needs no "try float4": advice printed for
    every kernel with scalar loads (many stream near the copy with them) teaches to skip the
    card. The line stays, unmarked, and says why."""
    fig = out.figure
    if fig is None or fig.data.get("bound") != "memory":
        return
    of_roof = fig.data.get("of_roof")
    if not isinstance(of_roof, float | int) or of_roof < NEAR_COPY:
        return
    for k in out.kernels:
        for f in k.findings:
            if f.kind == "vector-loads" and f.score > 0:
                f.score, f.advice = 0.0, ""
                f.detail += (
                    f" Your graded figure is already {of_roof:.2f} of the copy, so wider loads"
                    " have little left to win."
                )


def _figure_finding(p: roofline.Point) -> Finding:
    unit = p.metric
    fig = f"{p.figure:,.0f} {unit}" if unit == "GB/s" else f"{p.figure:.1f} {unit}"
    ceiling = p.bandwidth_name if p.bound == "memory" else p.compute_name
    return Finding(
        kind="roofline",
        what="figure",
        value=f"{fig}, {p.of_roof:.2f} of roof",
        verdict=f"AI {p.intensity:.3g} {'<' if p.bound == 'memory' else '>='} {p.ridge:.3g}:"
        f" {p.bound}-bound",
        tag="measured",
        detail=(
            f"{p.of_roof:.2f} of the {ceiling} roof at this intensity. Arithmetic intensity"
            f" {p.intensity:.3g} FLOP per byte ({p.counted}). This GPU's"
            f" roof: {p.bandwidth_gbs:,.0f} GB/s ({p.bandwidth_name}) up to"
            f" {p.compute_tflops:.1f} TFLOP/s ({p.compute_name}), meeting at {p.ridge:.3g} FLOP/B."
        ),
        data=p.to_dict(),
    )


def kernel_report(
    ks: KernelSource,
    comp: nvrtc.Compiled,
    dev: diagnose.Device,
    sites: list[LaunchSite],
    records: Sequence[Any] | None,
    metric: str | None,
    answers: kernel_device.Answers | None,
) -> KernelReport:
    """One compiled kernel's report: its resources, launch, occupancy and every rule's
    findings (diagnose.RULES); a kernel that does not compile gets the reason instead."""
    rep = KernelReport(ks.name, ks.line, code_line=ks.code_line)
    if not comp.ok:
        first = next((ln for ln in comp.log.splitlines() if "error" in ln), comp.log.strip())
        rep.error = f"does not compile: {first.strip()[:200]}"
        return rep
    try:
        resources = cubin.read(comp.cubin)
    except cubin.CubinError as exc:
        rep.error = f"cannot read the cubin: {exc}"
        return rep
    res = resources.get(ks.name)
    if res is None:
        rep.error = f'no kernel named {ks.name!r} in the source (extern "C" __global__ ...?)'
        return rep
    fn = ptx.parse(comp.ptx).get(ks.name)
    facts = ptx.facts(fn, ptx.kernel_params(ks.code, ks.name)) if fn is not None else None
    launch = _pick_launch(ks.name, records, sites)
    driver_blocks = None
    if answers is not None:
        attrs = answers.attributes(ks.code, ks.name, ks.options)
        if attrs is not None:
            res.registers = attrs.get("num_regs", res.registers)
            res.shared_static = attrs.get("shared_size_bytes", res.shared_static)
            res.local_bytes = attrs.get("local_size_bytes", res.local_bytes)
        if launch is not None and launch.threads:
            driver_blocks = answers.occupancy(
                ks.code, ks.name, ks.options, launch.threads, launch.shared_dynamic
            )
    rep.resources = {
        "registers": res.registers,
        "shared_static": res.shared_static,
        "local_bytes": res.local_bytes,
        "launch_bounds": res.max_threads,
        "maxreg": res.maxreg,
        "source": "driver" if answers is not None else f"nvrtc {comp.version} {comp.arch}",
    }
    info = comp.ptxas.get(ks.name)
    if info is not None:
        rep.resources |= {"spill_stores": info.spill_stores, "spill_loads": info.spill_loads}
    subject = diagnose.Subject(
        ks, res, info, dev, facts, launch, metric, driver_blocks=driver_blocks
    )
    subject.occupancy = diagnose.occupancy_of(ks, res, launch, dev, driver_blocks)
    if launch is not None:
        rep.launch = launch.to_dict()
        if subject.occupancy is not None:
            rep.occupancy = subject.occupancy.to_dict()
    rep.findings += diagnose.findings(subject)
    return rep


def device_questions(text: str) -> list[dict[str, Any]]:
    """What `--gpu` asks the driver about the kernels of a learner's file: each kernel's code,
    name and options, and the block and shared memory of its launch in the source."""
    found = scan(text)
    out = []
    for ks in found.kernels:
        launch = _pick_launch(ks.name, None, found.launches)
        out.append(
            {
                "code": ks.code,
                "name": ks.name,
                "options": list(ks.options),
                "block": launch.threads if launch else None,
                "shared_dynamic": launch.shared_dynamic if launch else 0,
            }
        )
    return out


def explain_file(path: Path | str, **kwargs: Any) -> Explanation:
    """Explain the kernels in the file at `path`; keyword arguments as for `explain`."""
    p = Path(path)
    return explain(
        p.read_text(encoding="utf-8"),
        filename=kwargs.pop("filename", p.name),
        path=kwargs.pop("path", p),
        **kwargs,
    )


def add_profile(e: Explanation, prof: Any) -> Explanation:
    """Tier 1: put an ncu pass (ncu.Profile) into a static explanation. Each kernel's measured
    findings join its static ones, and a static guess at something ncu measured (coalescing,
    bank conflicts, occupancy, waves, local memory) gives way to the measurement; the source
    counters, where the pass has them, become the kernel's per-line findings."""
    from gpulab.explain import ncu, ncu_source  # deferred: only for a pass

    by_name = {k.name: k for k in e.kernels}
    by_line = ncu_source.parse(prof.source) if getattr(prof, "source", "") else {}
    for kp in prof.kernels:
        measured = ncu.findings(kp)
        rep = by_name.get(kp.name)
        if rep is None:
            rep = KernelReport(kp.name, 0)
            e.kernels.append(rep)
            by_name[kp.name] = rep
        flight = next((f.data["in_flight"] for f in rep.findings if "in_flight" in f.data), None)
        if flight:
            measured = [ncu.in_flight(f, kp, flight) for f in measured]
        gone = ncu.replaced_kinds(kp, measured)
        rep.findings = [f for f in rep.findings if f.kind not in gone] + measured
        rep.line_findings = ncu_source.findings(
            ncu_source.lines_of(by_line, kp.name),
            kp.name,
            rep.file_line,
            load_hit=kp.get("l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct") or 0.0,
            issue_busy=kp.get("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        )
    e.tier = 1
    e.report = prof.report
    e.profile_seconds = prof.seconds
    return e


def tier1(
    e: Explanation,
    exercise: str,
    path: Path,
    *,
    quiet: bool = False,
    on_progress: Callable[[str], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> Explanation:
    """Run the ncu pass over the kernels Tier 0 found in `path` and add it to `e` (a note says
    why not, and Tier 0 stays, when there is no ncu or no permission)."""
    import sys  # deferred: loaded when used

    from gpulab.explain import ncu, tools  # deferred: only for a pass

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
