"""What the facts mean: one verdict per check, with the fix a person can type.

Pure functions of the facts `gather.py` collects (NVML, the probe subprocess, the worker, the
directories, the terminal), so every broken setup can be written down as facts in a CPU test.

A machine without a GPU is not broken: it is CPU mode. Its NVML line is a warning that says why,
the checks that need a GPU are skipped, and nothing fails for it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
WORKER_SLOW_S = 30.0  # a ready worker slower than this gets a warning (the TUI waits longer)
TORCH_INDEX = "https://download.pytorch.org/whl"
TITLES = {"torch": "torch", "cupy": "CuPy"}
# The CUDA versions PyTorch publishes wheel indexes for (download.pytorch.org/whl/cuXYZ), oldest
# first; a driver runs any build whose CUDA version is not newer than its own.
TORCH_CUDA_BUILDS = ("11.8", "12.1", "12.4", "12.6", "12.8", "12.9", "13.0")


@dataclass
class Check:
    """One doctor check's outcome: status (ok, warn, fail, skip), message and fix."""

    id: str
    title: str
    status: str  # ok, warn, fail, skip
    message: str
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The check as JSON-ready data."""
        return asdict(self)


def major(version: str | None) -> int | None:
    """12 from "12.8"; None for "" or None."""
    head = (version or "").split(".")[0].strip()
    return int(head) if head.isdigit() else None


def version_tuple(version: str | None) -> tuple[int, ...]:
    """(major, minor) of a version string; 0 for parts that are not numbers."""
    parts = (version or "").split(".")[:2]
    return tuple(int(p) if p.isdigit() else 0 for p in parts)


def cupy_package(cuda_major: int | None) -> str:
    """The CuPy wheel name for a CUDA major version."""
    return f"cupy-cuda{cuda_major}x" if cuda_major else "cupy-cuda12x or cupy-cuda13x"


def torch_index_hint(driver_cuda: str) -> str:
    """The pip line for a CUDA build of torch this driver can run: the newest of PyTorch's
    CUDA indexes that is not newer than the driver's CUDA version."""
    have = version_tuple(driver_cuda)
    fits = [v for v in TORCH_CUDA_BUILDS if version_tuple(v) <= have] if major(driver_cuda) else []
    if not fits:
        return (
            f"update the NVIDIA driver, then pip install torch --index-url {TORCH_INDEX}/cu128 "
            "(PyTorch's CUDA builds start at CUDA 11.8)"
        )
    tag = "cu" + fits[-1].replace(".", "")
    return f"pip install --force-reinstall torch --index-url {TORCH_INDEX}/{tag}"


def cpu_mode(facts: dict[str, Any]) -> list[str]:
    """Why this is CPU mode (NVML finds no usable GPU), or [] when NVML sees one."""
    nvml = facts.get("nvml", {})
    if nvml.get("loaded") and nvml.get("gpus"):
        return []
    reasons = [nvml.get("error") or "NVML sees no GPU"]
    torch = facts.get("probe", {}).get("torch", {})
    if torch.get("installed") and not torch.get("cuda"):
        reasons.append(f"torch {torch.get('version', '')} is a CPU-only build")
    if not facts.get("probe", {}).get("cupy", {}).get("dists"):
        reasons.append("CuPy is not installed")
    return reasons


def check_nvml(facts: dict[str, Any]) -> Check:
    """Whether NVML loaded and sees GPUs."""
    nvml = facts.get("nvml", {})
    title = "NVML"
    if not nvml.get("loaded"):
        error = nvml.get("error", "NVML did not load")
        if nvml.get("absent"):  # no driver at all: CPU mode, not a broken setup
            return Check(
                "nvml",
                title,
                WARN,
                f"CPU mode: {error}",
                nvml.get("fix")
                or "for a GPU: install the NVIDIA driver (it ships libnvidia-ml.so)",
            )
        return Check("nvml", title, FAIL, error, nvml.get("fix", ""))
    gpus = nvml.get("gpus", [])
    if not gpus:
        return Check("nvml", title, WARN, "CPU mode: NVML loads but sees no GPU")
    names = ", ".join(sorted({g["name"] for g in gpus}))
    mig = " (MIG on)" if any(g.get("mig") for g in gpus) else ""
    return Check(
        "nvml",
        title,
        OK,
        f"driver {nvml.get('driver')} (CUDA {nvml.get('cuda')}), {len(gpus)} GPU(s): {names}{mig}",
    )


def check_driver(facts: dict[str, Any]) -> Check:
    """Whether the driver is new enough for torch's CUDA."""
    nvml, torch = facts.get("nvml", {}), facts.get("probe", {}).get("torch", {})
    title = "driver vs torch CUDA"
    if not (nvml.get("loaded") and nvml.get("gpus")):
        return Check("driver", title, SKIP, "no NVIDIA driver")
    runtime = torch.get("cuda") or ""
    if not runtime:
        return Check("driver", title, SKIP, "torch has no CUDA runtime (see the torch line)")
    drv_cuda = nvml.get("cuda", "")
    if version_tuple(drv_cuda) >= version_tuple(runtime):
        return Check(
            "driver", title, OK, f"the driver supports CUDA {drv_cuda} ≥ torch's CUDA {runtime}"
        )
    message = (
        f"the driver {nvml.get('driver')} supports CUDA {drv_cuda}, older than the CUDA "
        f"{runtime} runtime this torch was built with"
    )
    fix = f"update the NVIDIA driver, or install a torch built for CUDA {drv_cuda}: " + (
        torch_index_hint(drv_cuda)
    )
    # Minor-version compatibility lets a newer 12.x runtime run on an older 12.x driver.
    if torch.get("available"):
        return Check("driver", title, WARN, message + " (torch runs anyway)", fix)
    return Check("driver", title, FAIL, message, fix)


def check_torch(facts: dict[str, Any]) -> Check:
    """Whether torch is installed and, with a GPU, built with CUDA and able to use it."""
    nvml, torch = facts.get("nvml", {}), facts.get("probe", {}).get("torch", {})
    title = "torch"
    gpus = nvml.get("gpus", []) if nvml.get("loaded") else []
    if not torch.get("installed"):
        fix = "pip install torch" if not gpus else torch_index_hint(nvml.get("cuda", ""))
        return Check("torch", title, FAIL, torch.get("error") or "torch is not installed", fix)
    version = torch.get("version", "")
    if not torch.get("cuda"):
        message = f"torch {version} is a CPU-only build"
        if gpus:
            fix = torch_index_hint(nvml.get("cuda", ""))
            return Check("torch", title, FAIL, message + " on a machine with a GPU", fix)
        return Check("torch", title, WARN, message + " (fine without a GPU)")
    if not gpus:
        return Check("torch", title, WARN, f"torch {version} (CUDA build); NVML sees no GPU")
    seen, count = torch.get("count", 0), len(gpus)
    visible = facts.get("env", {}).get("CUDA_VISIBLE_DEVICES")
    mig = any(g.get("mig") for g in gpus)
    head = f"torch {version} (CUDA {torch.get('cuda')})"
    if seen == count and torch.get("available"):
        return Check("torch", title, OK, f"{head} sees the {count} GPU(s) NVML sees")
    if visible is not None:
        return Check(
            "torch",
            title,
            WARN if seen else FAIL,
            f"{head} sees {seen} of NVML's {count} GPU(s): CUDA_VISIBLE_DEVICES={visible!r}",
            "unset CUDA_VISIBLE_DEVICES to use every GPU" if seen else "unset CUDA_VISIBLE_DEVICES",
        )
    if mig and seen:
        return Check(
            "torch",
            title,
            WARN,
            f"{head} sees {seen} device(s), NVML {count} GPU(s) with MIG on: CUDA counts MIG "
            "instances, not GPUs",
            "gpulab uses one instance; pick it with CUDA_VISIBLE_DEVICES=MIG-<uuid>",
        )
    why = torch.get("error") or f"torch sees {seen} GPU(s), NVML {count}"
    return Check(
        "torch",
        title,
        FAIL,
        f"{head}: {why}",
        "in a container, give it the GPUs (docker run --gpus all, or the NVIDIA container "
        "toolkit); else check `nvidia-smi` and reboot after a driver upgrade",
    )


def check_cupy(facts: dict[str, Any]) -> Check:
    """Whether exactly one CuPy build, for this driver's CUDA, is installed and works."""
    nvml, probe = facts.get("nvml", {}), facts.get("probe", {})
    cupy, torch = probe.get("cupy", {}), probe.get("torch", {})
    title = "CuPy"
    dists = cupy.get("dists", [])
    have_gpu = bool(nvml.get("loaded") and nvml.get("gpus"))
    drv_major = major(nvml.get("cuda"))
    want = major(torch.get("cuda")) or drv_major
    if not dists:
        if not have_gpu:
            return Check("cupy", title, SKIP, "not installed (it needs a GPU)")
        return Check(
            "cupy",
            title,
            WARN,
            "not installed: the custom-kernel contenders are unavailable",
            f"pip install {cupy_package(want)}",
        )
    if len(dists) > 1:
        keep = cupy_package(want)
        return Check(
            "cupy",
            title,
            FAIL,
            f"{len(dists)} CuPy packages are installed ({', '.join(dists)}); they overwrite "
            "each other",
            f"pip uninstall -y {' '.join(dists)} && pip install {keep}",
        )
    dist = dists[0]
    built = major(cupy.get("dist_cuda"))  # 12 from cupy-cuda12x; None for a source build
    ran = cupy.get("runtime", "")
    head = f"{dist} {cupy.get('version', '')}".strip()
    if built and drv_major and built > drv_major:
        return Check(
            "cupy",
            title,
            FAIL,
            f"{head} needs a CUDA {built} driver; this driver supports CUDA {nvml.get('cuda')}",
            f"pip uninstall -y {dist} && pip install {cupy_package(drv_major)} "
            "(or update the driver)",
        )
    if cupy.get("error"):
        fix = f"pip uninstall -y {dist} && pip install {cupy_package(want)}"
        return Check("cupy", title, FAIL, f"{head}: {cupy['error']}", fix)
    if not have_gpu:
        return Check("cupy", title, SKIP, f"{head} installed; no GPU to use it on")
    if not cupy.get("count"):
        return Check(
            "cupy",
            title,
            FAIL,
            f"{head} sees no GPU, NVML sees {len(nvml.get('gpus', []))}",
            "check CUDA_VISIBLE_DEVICES and, in a container, that it was given the GPUs",
        )
    if built and want and built != want:
        return Check(
            "cupy",
            title,
            WARN,
            f"{head} is for CUDA {built}, torch uses CUDA {want}: two CUDA runtimes in one process",
            f"pip uninstall -y {dist} && pip install {cupy_package(want)}",
        )
    return Check(
        "cupy", title, OK, f"{head} (CUDA runtime {ran}) sees {cupy.get('count', 0)} GPU(s)"
    )


def check_emulator(facts: dict[str, Any]) -> Check:
    """Whether the CUDA emulator can build kernels (it needs a host C++ compiler): where CuPy
    cannot run, it is what runs the CUDA C exercises, correctness only."""
    emu = facts.get("emulator", {})
    title = "CUDA emulator"
    cupy_runs = check_cupy(facts).status == OK
    use = (
        "for the CUDA C exercises where CuPy cannot run"
        if cupy_runs
        else "runs the CUDA C exercises here (correctness only, no speed grade)"
    )
    if emu.get("compiler"):
        return Check("emulator", title, OK, f"{emu['compiler']}: {use}")
    why = emu.get("missing") or "no C++ compiler (g++ or clang++)"
    if cupy_runs:
        return Check("emulator", title, SKIP, f"{why}; not needed while CuPy runs the kernels")
    return Check(
        "emulator",
        title,
        WARN,
        f"{why}: the CUDA C exercises cannot run here (the emulator compiles them with it)",
        emu.get("fix", ""),
    )


def _gpu_step(facts: dict[str, Any], check_id: str, title: str, key: tuple[str, str]) -> Check:
    """A probe step that ran (or not) on the GPU: a kernel, a pinned buffer."""
    probe = facts.get("probe", {})
    if probe.get("error"):
        return Check(check_id, title, FAIL, f"the probe process failed: {probe['error']}")
    step = probe.get(key[0], {}).get(key[1])
    if not step:
        why = "no GPU" if cpu_mode(facts) else f"not run: see the {TITLES[key[0]]} line"
        return Check(check_id, title, SKIP, why)
    if step.get("ok"):
        return Check(check_id, title, OK, step.get("detail", "ran and gave the right answer"))
    return Check(check_id, title, FAIL, step.get("error", "failed"), step.get("fix", ""))


def check_kernels(facts: dict[str, Any]) -> list[Check]:
    """Whether a kernel runs through CuPy (NVRTC) and through torch."""
    return [
        _gpu_step(facts, "kernel-cupy", "kernel via NVRTC + CuPy", ("cupy", "kernel")),
        _gpu_step(facts, "kernel-torch", "kernel via torch", ("torch", "kernel")),
    ]


def check_pinned(facts: dict[str, Any]) -> Check:
    """Whether pinned host memory can be allocated and copied."""
    return _gpu_step(facts, "pinned", "pinned host memory", ("torch", "pinned"))


def check_worker(facts: dict[str, Any]) -> Check:
    """Whether gpulab's worker started and answered."""
    worker = facts.get("worker", {})
    title = "worker"
    if not worker.get("ready"):
        return Check(
            "worker",
            title,
            FAIL,
            worker.get("error", "the worker did not start"),
            "run `gpulab run montecarlo` to see its output; `gpulab doctor` lines above name "
            "the package it could not load",
        )
    took = float(worker.get("ready_s", 0.0))
    limit = float(worker.get("limit_s", 0.0))
    message = f"pid {worker.get('pid')} ready in {took:.1f} s (limit {limit:g} s)"
    if took > WORKER_SLOW_S:
        return Check(
            "worker", title, WARN, message + ": slow", "a busy machine or a cold disk cache"
        )
    return Check("worker", title, OK, message)


def check_dir(facts: dict[str, Any], check_id: str, title: str) -> Check:
    """Whether the folder behind `check_id` is writable."""
    entry = facts.get(check_id, {})
    if entry.get("problem"):
        return Check(check_id, title, FAIL, entry["problem"], entry.get("fix", ""))
    return Check(check_id, title, OK, f"{entry.get('path')} is writable")


def check_terminal(facts: dict[str, Any]) -> Check:
    """Whether stdout is a terminal that shows the TUI well: colours and at least 80x24."""
    term = facts.get("terminal", {})
    title = "terminal"
    if not term.get("tty"):  # redirected: this is not the terminal gpulab will draw on
        return Check(
            "terminal",
            title,
            SKIP,
            "output is not a terminal: run `gpulab doctor` in the one you use gpulab in",
        )
    notes, fixes = [], []
    if term.get("no_color"):
        notes.append("NO_COLOR is set: no colour")
    elif term.get("colorterm") in ("truecolor", "24bit"):
        notes.append("truecolor")
    else:
        notes.append(f"COLORTERM={term.get('colorterm') or 'unset'}: 256 colours at best")
        fixes.append("export COLORTERM=truecolor (SSH seldom forwards it)")
    size = term.get("size")
    if size and (size[0] < 80 or size[1] < 24):
        notes.append(f"{size[0]}x{size[1]} is below 80x24: panes switch with tab")
        fixes.append("enlarge the window to at least 80x24")
    elif size:
        notes.append(f"{size[0]}x{size[1]}")
    status = WARN if fixes or term.get("no_color") else OK
    return Check("terminal", title, status, ", ".join(notes), "; ".join(fixes))


def check_profilers(facts: dict[str, Any]) -> list[Check]:
    """Whether `gpulab ex explain --ncu` and `gpulab ex check --sanitize` can run here: the GPU's
    counters readable by this user, ncu found, compute-sanitizer found (each with the fix). Not
    having them is a warning: the static explain (Tier 0) works without them."""
    from gpulab.core.nvtools import COUNTERS_FIX, FIX  # deferred: loaded when the doctor runs

    tools = facts.get("nvtools", {})
    nvml = facts.get("nvml", {})
    if not (nvml.get("loaded") and nvml.get("gpus")):
        why = "no GPU: `gpulab ex explain` gives its static tier only"
        return [
            Check("counters", "GPU counters", SKIP, why),
            Check("ncu", "Nsight Compute", SKIP, why),
            Check("sanitizer", "compute-sanitizer", SKIP, "no GPU"),
        ]
    admin_only, root = tools.get("admin_only"), tools.get("root")
    if admin_only is None:
        counters = Check("counters", "GPU counters", WARN, "the driver does not say (no"
                         " /proc/driver/nvidia/params): ncu will tell", "")  # fmt: skip
    elif admin_only and not root:
        counters = Check(
            "counters",
            "GPU counters",
            WARN,
            "admin-only (RmProfilingAdminOnly: 1): explain --ncu will be refused",
            COUNTERS_FIX,
        )
    else:
        how = "as root" if admin_only else "RmProfilingAdminOnly: 0"
        counters = Check("counters", "GPU counters", OK, f"readable ({how})")
    out = [counters]
    for key, title, fact, use in (
        ("ncu", "Nsight Compute", "ncu", "gpulab ex explain NAME --ncu"),
        ("sanitizer", "compute-sanitizer", "sanitizer", "gpulab ex check NAME --sanitize"),
    ):
        path = tools.get(fact)
        tool = "ncu" if key == "ncu" else "compute-sanitizer"
        if path:
            out.append(Check(key, title, OK, f"{path} (for {use})"))
        else:
            out.append(Check(key, title, WARN, f"not found: {use} cannot run", FIX[tool]))
    return out


def evaluate(facts: dict[str, Any]) -> list[Check]:
    """Every check, in the order a person fixes them (driver before torch before kernels)."""
    return [
        check_nvml(facts),
        check_driver(facts),
        check_torch(facts),
        check_cupy(facts),
        check_emulator(facts),
        *check_kernels(facts),
        check_pinned(facts),
        check_worker(facts),
        check_dir(facts, "datadir", "data directory"),
        check_dir(facts, "workspace", "exercise workspace"),
        check_terminal(facts),
        *check_profilers(facts),
    ]


def broken(checks: list[Check]) -> bool:
    """True when any check failed."""
    return any(c.status == FAIL for c in checks)
