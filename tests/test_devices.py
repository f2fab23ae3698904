from gpulab.core.devices import Backend, Inventory, detect
from gpulab.experiments.base import Contender, Experiment


def test_detect_reports_every_backend_with_reason():
    inv = detect()
    assert set(inv.backends) == {"numpy", "torch-cpu", "torch-cuda", "cupy"}
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
