"""The facts the doctor judges, collected without importing torch or CuPy here.

NVML is asked in this process (the TUI asks it too); torch and CuPy only in the probe subprocess
(`probe.py`) and in a real worker started through `RunnerClient`, as the lab starts one. The two
run side by side, each under a time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gpulab.core.datadir import resolve
from gpulab.core.processes import describe_exit
from gpulab.doctor.probe import MARKER
from gpulab.exercises.workspace import WORKDIR_ENV, default_root
from gpulab.runner.client.runner_client import RunnerClient
from gpulab.runner.client.supervisor import WorkerStartError
from gpulab.telemetry import nvml as codes

PROBE_LIMIT_S = 120.0  # importing torch and CuPy cold, plus a CUDA context and one NVRTC compile
# How long the lab waits for its worker (gpulab.app.worker_link.READY_TIMEOUT_S; a test keeps
# them equal without the doctor importing textual).
WORKER_LIMIT_S = 180.0
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
# NVML failures that mean "no GPU here" (CPU mode) rather than "a GPU is here and broken".
_ABSENT = {codes.LIBRARY_NOT_FOUND, codes.DRIVER_NOT_LOADED}


def nvml_facts(nvml: Any = None) -> dict[str, Any]:
    """What NVML says: loaded or why not, the driver, and each GPU (name, UUID, MIG on)."""
    if nvml is None:
        try:
            import pynvml
        except ImportError:
            return {
                "loaded": False,
                "error": "the NVML binding is missing",
                "fix": "pip install nvidia-ml-py",
            }
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - every NVML failure is a fact the doctor judges
        code = codes.error_code(exc)
        out: dict[str, Any] = {"loaded": False, "error": codes.reason_for(exc)}
        if code == codes.DRIVER_NOT_LOADED:  # the library is here: maybe a GPU is too
            out.update(
                absent=True, fix="if this machine has a GPU: sudo modprobe nvidia, or reboot"
            )
        elif code in _ABSENT:
            out["absent"] = True
        elif code == codes.LIB_RM_VERSION_MISMATCH:
            out["fix"] = "reboot (the driver was upgraded under a running kernel module)"
        else:
            out["fix"] = "check `nvidia-smi`; a lost GPU needs a reset or a reboot"
        return out
    try:
        drv = codes.text(nvml.nvmlSystemGetDriverVersion())
        cuda = int(nvml.nvmlSystemGetCudaDriverVersion_v2())
        gpus = []
        for i in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(i)
            mig = False
            with contextlib.suppress(Exception):  # NotSupported: a model without MIG
                mig = bool(nvml.nvmlDeviceGetMigMode(handle)[0])
            gpus.append(
                {
                    "name": codes.text(nvml.nvmlDeviceGetName(handle)),
                    "uuid": codes.text(nvml.nvmlDeviceGetUUID(handle)),
                    "mig": mig,
                }
            )
    except Exception as exc:  # noqa: BLE001 - every NVML failure is a fact the doctor judges
        return {
            "loaded": False,
            "error": f"NVML loads but cannot read the GPUs: {codes.reason_for(exc)}",
            "fix": "check `nvidia-smi`; a lost GPU needs a reset or a reboot",
        }
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
    return {
        "loaded": True,
        "driver": drv,
        "cuda": f"{cuda // 1000}.{cuda % 1000 // 10}",
        "gpus": gpus,
    }


def dir_facts(path: Path, what: str, fix: str) -> dict[str, Any]:
    """Can gpulab keep files in `path`? Tried with a real file (a read-only mount or an ACL
    can make os.access lie)."""
    out: dict[str, Any] = {"path": str(path)}
    problem = ""
    if path.exists() and not path.is_dir():
        problem = f"{what} {path} is a file, not a folder"
    else:
        try:
            path.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=path, prefix=".gpulab-probe-"):
                pass
        except OSError as exc:
            problem = f"{what} {path} is not writable ({exc.strerror or exc})"
    if problem:
        out.update(problem=problem, fix=fix)
    return out


def dirs_facts() -> dict[str, Any]:
    """Whether the data and exercise folders are writable."""
    return {
        "datadir": dir_facts(
            resolve(), "the data dir", "choose another with --data-dir (env GPULAB_DATA_DIR)"
        ),
        "workspace": dir_facts(
            default_root(),
            "the exercise workspace",
            f"choose another with --workdir on `gpulab ex` (env {WORKDIR_ENV})",
        ),
    }


def terminal_facts() -> dict[str, Any]:
    """Whether stdout is a terminal, and its size and colours."""
    tty = sys.stdout.isatty()
    size = shutil.get_terminal_size((0, 0)) if tty else None
    return {
        "tty": tty,
        "size": [size.columns, size.lines] if size and size.columns else None,
        "colorterm": os.environ.get("COLORTERM", "").strip().lower(),
        "no_color": bool(os.environ.get("NO_COLOR")),
    }


async def probe_facts(
    limit_s: float = PROBE_LIMIT_S, argv: list[str] | None = None
) -> dict[str, Any]:
    """Run the probe subprocess (`argv`: another command, for tests) and read its one line;
    {"error": ...} if it never says it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    proc = await asyncio.create_subprocess_exec(
        *(argv or [sys.executable, "-m", "gpulab.doctor.probe"]),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), limit_s)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        return {"error": f"it did not finish in {limit_s:g} s (a hung CUDA init?)"}

    for line in reversed(out.decode(errors="replace").splitlines()):
        if line.startswith(MARKER):
            return dict(json.loads(line[len(MARKER) :]))

    tail = [s for s in err.decode(errors="replace").splitlines() if s.strip()][-1:]
    how = describe_exit(proc.returncode or 0)[0]
    return {"error": f"it {how} without its report" + (f": {tail[0]}" if tail else "")}


async def worker_facts(limit_s: float = WORKER_LIMIT_S) -> dict[str, Any]:
    """Start a real worker, as the lab does, and wait for its hello."""
    out: dict[str, Any] = {"ready": False, "limit_s": limit_s}
    client = RunnerClient(standby=False)
    t0 = time.monotonic()
    try:
        await client.start()
        hello = await client.wait_ready(limit_s)
        out.update(ready=True, pid=hello.get("pid"), ready_s=time.monotonic() - t0)
    except asyncio.TimeoutError:
        out["error"] = f"the worker did not answer within {limit_s:g} s"
    except (WorkerStartError, OSError, RuntimeError) as exc:
        out["error"] = f"the worker could not start: {exc}"
    finally:
        await client.shutdown()
    return out


def nvtools_facts() -> dict[str, Any]:
    """Nsight Compute and compute-sanitizer (paths or None) and the driver's counter setting."""
    from gpulab.core import nvtools  # deferred: loaded when the doctor gathers

    return {
        "ncu": nvtools.find("ncu"),
        "sanitizer": nvtools.find("compute-sanitizer"),
        "admin_only": nvtools.counters_admin_only(),
        "root": hasattr(os, "geteuid") and os.geteuid() == 0,
    }


def emulator_facts() -> dict[str, Any]:
    """The host C++ compiler the CUDA emulator builds kernels with (None when absent), and why
    not with the fix."""
    from gpulab.emulator import toolchain  # deferred: loaded when the doctor gathers

    return {"compiler": toolchain.compiler(), "missing": toolchain.absent(), "fix": toolchain.FIX}


async def gather_async(nvml: Any = None) -> dict[str, Any]:
    """Every fact the doctor judges: NVML, a probe process and a worker."""
    probe, worker = await asyncio.gather(probe_facts(), worker_facts())
    return {
        "nvml": nvml_facts(nvml),
        "probe": probe,
        "worker": worker,
        **dirs_facts(),
        "terminal": terminal_facts(),
        "nvtools": nvtools_facts(),
        "emulator": emulator_facts(),
        "env": {
            k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "GPULAB_WORKDIR") if k in os.environ
        },
    }


def gather(nvml: Any = None) -> dict[str, Any]:
    """`gather_async`, run to completion."""
    return asyncio.run(gather_async(nvml))
