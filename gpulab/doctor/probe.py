"""The doctor's GPU probe, run as `python -m gpulab.doctor.probe` in a process of its own.

It imports torch and CuPy, compiles and runs a tiny kernel each way, pins host memory, and prints
one line, `MARKER` followed by a JSON object of what it found. A crash here (a broken CUDA
install can segfault at import) is then the probe's exit status, not the doctor's.

Each step catches its own exception, so one broken piece does not hide the others.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import traceback
from importlib import metadata
from typing import Any

MARKER = "GPULAB-DOCTOR "
N = 1 << 16  # elements in the test kernels: big enough for many blocks, small enough to be instant
# The kernel NVRTC compiles: y = 2 * x + 1, checked element by element on the host.
KERNEL = r"""
extern "C" __global__ void doctor_axpb(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
"""


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def cupy_dists() -> list[tuple[str, str]]:
    """The installed CuPy distributions (name, version): cupy-cuda12x, cupy-cuda13x, cupy, ..."""
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        # The object is an email.message.Message, which has get(); typeshed declares
        # PackageMetadata.get only from Python 3.12.
        meta = dist.metadata.get("Name")  # type: ignore[attr-defined]  # get(): see above
        name = (meta or "").strip().lower()
        if name == "cupy" or name.startswith("cupy-cuda") or name.startswith("cupy-rocm"):
            found[name] = dist.version
    return sorted(found.items())


def dist_cuda(name: str) -> str:
    """ "12" from cupy-cuda12x, "11.2" from cupy-cuda112; "" for a source build (`cupy`)."""
    m = re.fullmatch(r"cupy-cuda(\d+)x", name)
    if m:
        return m.group(1)
    m = re.fullmatch(r"cupy-cuda(\d+)(\d)", name)
    return f"{m.group(1)}.{m.group(2)}" if m else ""


def probe_torch() -> dict[str, Any]:
    """torch's facts in a separate process: installed, CUDA build, devices, a kernel and pinned
    memory."""
    out: dict[str, Any] = {"installed": False}
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - ImportError, or a broken install's OSError: a fact to judge
        out["error"] = f"torch failed to import ({_one_line(exc)})"
        return out
    out.update(installed=True, version=torch.__version__, cuda=torch.version.cuda or "")
    if not out["cuda"]:
        return out
    try:
        out["available"] = bool(torch.cuda.is_available())
        out["count"] = torch.cuda.device_count()
        out["devices"] = [
            {"name": p.name, "uuid": str(getattr(p, "uuid", ""))}
            for p in (torch.cuda.get_device_properties(i) for i in range(out["count"]))
        ]
    except Exception as exc:  # noqa: BLE001 - torch's CUDA errors are facts to judge, whatever their class
        out.update(available=False, count=0, error=_one_line(exc))
    if not out.get("available"):
        return out
    out["kernel"] = _step(lambda: _torch_kernel(torch))
    out["pinned"] = _step(lambda: _torch_pinned(torch))
    return out


def _step(fn: Any) -> dict[str, Any]:
    try:
        return {"ok": True, "detail": fn()}
    except Exception as exc:  # noqa: BLE001 - each step's failure, of any class, is the fact recorded
        return {"ok": False, "error": _one_line(exc)}


def _torch_kernel(torch: Any) -> str:
    x = torch.arange(N, device="cuda", dtype=torch.float32)
    t0 = time.perf_counter()
    y = (2 * x + 1).cpu()
    took = time.perf_counter() - t0
    expected = 2 * torch.arange(N, dtype=torch.float32) + 1
    if not torch.equal(y, expected):
        raise RuntimeError("torch's y = 2x + 1 on the GPU disagrees with the CPU")
    return f"2x + 1 over {N} floats on cuda:0 matches the CPU ({took * 1e3:.1f} ms)"


def _torch_pinned(torch: Any) -> str:
    nbytes = 64 << 20
    host = torch.empty(nbytes // 4, dtype=torch.float32, pin_memory=True)
    if not host.is_pinned():
        raise RuntimeError("the buffer came back pageable")
    host.fill_(3.0)
    back = host.to("cuda", non_blocking=True).cpu()
    if not torch.equal(back, host):
        raise RuntimeError("a pinned round trip changed the data")
    return f"{nbytes >> 20} MiB pinned, copied to the GPU and back"


def probe_cupy() -> dict[str, Any]:
    """CuPy's facts: distributions installed, the CUDA it was built for, a kernel."""
    dists = cupy_dists()
    out: dict[str, Any] = {"dists": [name for name, _ in dists]}
    if not dists:
        return out
    name, version = dists[0]
    out.update(version=version, dist_cuda=dist_cuda(name))
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001 - a broken CuPy install raises more than ImportError: a fact
        out["error"] = f"failed to import ({_one_line(exc)})"
        return out
    try:
        rt = cupy.cuda.runtime.runtimeGetVersion()
        out["runtime"] = f"{rt // 1000}.{rt % 1000 // 10}"
        out["count"] = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - CuPy's CUDA errors are facts to judge, whatever their class
        out["error"] = f"cannot use CUDA ({_one_line(exc)})"
        return out
    if out["count"]:
        out["kernel"] = _step(lambda: _cupy_kernel(cupy))
    return out


def _cupy_kernel(cupy: Any) -> str:
    kernel = cupy.RawKernel(KERNEL, "doctor_axpb")
    t0 = time.perf_counter()
    kernel.compile()  # NVRTC, then the driver loads the module
    compiled = time.perf_counter() - t0
    x = cupy.arange(N, dtype=cupy.float32)
    y = cupy.empty_like(x)
    kernel(((N + 255) // 256,), (256,), (x, y, cupy.int32(N)))
    got = cupy.asnumpy(y)
    expected = 2 * cupy.asnumpy(x) + 1
    if not (got == expected).all():
        raise RuntimeError("the NVRTC kernel's y = 2x + 1 disagrees with the host")
    try:
        nvrtc = "NVRTC " + ".".join(map(str, cupy.cuda.nvrtc.getVersion()))
    except Exception:  # noqa: BLE001 - the version is a nicety; the kernel already ran
        nvrtc = "NVRTC"
    return f"{nvrtc} compiled it in {compiled * 1e3:.0f} ms; it ran and matches the host"


def probe() -> dict[str, Any]:
    """torch's and CuPy's facts, and the probe's pid."""
    return {"torch": probe_torch(), "cupy": probe_cupy(), "pid": os.getpid()}


def main() -> int:
    """Print the probe's facts as JSON (a failure becomes an error fact); always exit status 0."""
    try:
        facts = probe()
    except Exception:  # noqa: BLE001 - a bug here must still come back as a line the doctor can show
        facts = {"error": traceback.format_exc().strip().splitlines()[-1]}
    sys.stdout.write(MARKER + json.dumps(facts, default=str) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
