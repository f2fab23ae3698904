"""Where NVIDIA's command-line profilers are, and whether this machine lets a user read the GPU's
performance counters: for `gpulab ex explain --ncu` (Nsight Compute), `gpulab ex check
--sanitize` (compute-sanitizer) and `gpulab doctor`. Looks only at files: runs nothing.
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
from pathlib import Path

PARAMS = Path("/proc/driver/nvidia/params")
COUNTERS_FIX = (
    "an admin sets the nvidia module option NVreg_RestrictProfilingToAdminUsers=0 (a file in"
    " /etc/modprobe.d/), then reloads the driver or reboots"
)

# Where CUDA installs put them when they are not on PATH.
_SEARCH = {
    "ncu": (
        "/usr/local/cuda/bin/ncu",
        "/opt/nvidia/nsight-compute/*/ncu",
        "/usr/local/NVIDIA-Nsight-Compute*/ncu",
    ),
    "compute-sanitizer": (
        "/usr/local/cuda/bin/compute-sanitizer",
        "/usr/local/cuda/compute-sanitizer/compute-sanitizer",
    ),
}
_ENV = {"ncu": "GPULAB_NCU", "compute-sanitizer": "GPULAB_SANITIZER"}
FIX = {
    "ncu": "install Nsight Compute (the CUDA toolkit has it) or set GPULAB_NCU=/path/to/ncu",
    "compute-sanitizer": (
        "install the CUDA toolkit or pip install nvidia-cuda-sanitizer-api, or set"
        " GPULAB_SANITIZER=/path/to/compute-sanitizer"
    ),
}


def _wheel_sanitizer() -> list[str]:
    """compute-sanitizer from the nvidia-cuda-sanitizer-api wheel, if installed."""
    out = []
    for base in sys.path:
        out += glob.glob(
            os.path.join(base, "nvidia", "cuda_sanitizer_api", "*", "compute-sanitizer")
        )
    return out


def find(name: str) -> str | None:
    """The path of `ncu` or `compute-sanitizer`: $GPULAB_NCU / $GPULAB_SANITIZER, PATH,
    $CUDA_HOME/bin, the usual install folders, the sanitizer wheel; None when not found."""
    env = os.environ.get(_ENV.get(name, ""), "")
    if env:
        return env if os.access(env, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    cands = []
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home:
            cands.append(os.path.join(home, "bin", name))
    for pattern in _SEARCH.get(name, ()):
        cands += sorted(glob.glob(pattern), reverse=True)  # the newest version folder first
    if name == "compute-sanitizer":
        cands += _wheel_sanitizer()
    return next((c for c in cands if os.path.isfile(c) and os.access(c, os.X_OK)), None)


def counters_admin_only(params: Path = PARAMS) -> bool | None:
    """Whether the driver lets only admins read performance counters (RmProfilingAdminOnly in
    /proc/driver/nvidia/params); None when the driver does not say (no driver, not Linux)."""
    try:
        text = params.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "RmProfilingAdminOnly":
            return value.strip() not in ("0", "")
    return None
