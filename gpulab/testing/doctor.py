"""Doctor facts for tests: a healthy GPU box (NVML answered by the fake), to break one piece at
a time. `gpulab.doctor.checks` judges them exactly as it judges what `gather` collects."""

from __future__ import annotations

from typing import Any

from gpulab.doctor import gather, probe
from gpulab.testing.fake_nvml import FakeNvml


def _step(detail: str = "ran") -> dict[str, Any]:
    return {"ok": True, "detail": detail}


def healthy(variant: str = "full", runtime: str = "12.8", cupy: str = "cupy-cuda12x") -> dict:
    """An H100 box where everything works, NVML answered by the fake."""
    nvml = FakeNvml(variant)
    nvml.cuda = 12080 if runtime.startswith("12") else 13000
    facts = {
        "nvml": gather.nvml_facts(nvml),
        "probe": {
            "torch": {
                "installed": True,
                "version": "2.9.0",
                "cuda": runtime,
                "available": True,
                "count": len(nvml.gpus),
                "kernel": _step(),
                "pinned": _step(),
            },
            "cupy": {
                "dists": [cupy],
                "version": "13.6.0",
                "dist_cuda": probe.dist_cuda(cupy),
                "runtime": runtime,
                "count": len(nvml.gpus),
                "kernel": _step(),
            },
        },
        "worker": {"ready": True, "pid": 4321, "ready_s": 4.2, "limit_s": 180.0},
        "datadir": {"path": "/data"},
        "workspace": {"path": "/data/exercises"},
        "terminal": {"tty": True, "size": [120, 40], "colorterm": "truecolor", "no_color": False},
        "nvtools": {
            "ncu": "/usr/local/cuda/bin/ncu",
            "sanitizer": "/usr/local/cuda/bin/compute-sanitizer",
            "admin_only": False,
            "root": False,
        },
        "emulator": {"compiler": "/usr/bin/g++", "missing": "", "fix": "sudo apt install g++"},
        "env": {},
    }
    return facts
