import pytest

from gpulab.core import devices
from gpulab.core.devices import Backend, Inventory, detect
from gpulab.experiments.base import Contender, Experiment


def test_detect_reports_every_backend_with_reason():
    inv = detect()
    assert set(inv.backends) == {"numpy", "torch-cpu", "torch-cuda", "cupy", "emulator"}
    assert inv.available("numpy")
    for b in inv.backends.values():
        assert b.available or b.reason, f"{b.name} unavailable without a reason"
    if not inv.has_gpu:
        assert inv.gpu_reason
        assert inv.label().startswith("CPU mode:")


def test_inventory_roundtrip():
    inv = Inventory(backends={"cupy": Backend("cupy", False, reason="not installed")})
    assert Inventory.from_dict(inv.to_dict()).reason("cupy") == "not installed"


def test_availability_explains_missing_gpu_and_cupy():
    class E(Experiment):
        contenders = (
            Contender("np", "NumPy", "numpy"),
            Contender("cp", "CuPy", "cupy"),
            Contender("tc", "torch", "torch-cuda"),
        )

    inv = Inventory(
        backends={
            "numpy": Backend("numpy", True),
            "torch-cuda": Backend("torch-cuda", False, reason="CPU-only build"),
            "cupy": Backend("cupy", False, reason="CuPy is not installed: pip install x"),
        },
        gpu_reason="no driver",
    )
    av = E().availability(inv)
    assert av["np"] == ""
    assert "pip install" in av["cp"]
    assert "needs a GPU" in av["tc"] and "no driver" in av["tc"]


@pytest.fixture
def cuda_build(monkeypatch):
    """This torch, pretending to be a CUDA 13.0 build, with no GPU to find."""
    import torch

    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return monkeypatch


def test_reason_no_driver(cuda_build):
    cuda_build.setattr(devices, "_driver", lambda: ("", "", "no NVIDIA driver found (x)"))
    inv = detect()
    assert inv.reason("torch-cuda") == "no NVIDIA driver found (x)"
    assert inv.gpu_reason == "no NVIDIA driver found (x)"


def test_reason_driver_too_old_for_the_runtime(cuda_build):
    cuda_build.setattr(devices, "_driver", lambda: ("535.54", "12.2", ""))
    inv = detect()
    why = inv.reason("torch-cuda")
    assert "535.54" in why and "CUDA 12.2" in why and "CUDA 13.0" in why and "update" in why


def test_reason_cuda_visible_devices_hides_every_gpu(cuda_build):
    cuda_build.setattr(devices, "_driver", lambda: ("580.1", "13.0", ""))
    cuda_build.setenv("CUDA_VISIBLE_DEVICES", "")
    inv = detect()
    assert "CUDA_VISIBLE_DEVICES" in inv.reason("torch-cuda")
    assert "CUDA_VISIBLE_DEVICES" in inv.gpu_reason


def test_reason_cpu_only_torch(monkeypatch):
    import torch

    monkeypatch.setattr(torch.version, "cuda", None)
    assert "CPU-only build" in detect().reason("torch-cuda")
