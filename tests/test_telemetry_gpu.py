"""Telemetry on a real NVIDIA GPU (skipped without one): the real driver through the same code."""

from __future__ import annotations

import os

import pytest

from gpulab.telemetry.sampler import TelemetryReader
from gpulab.telemetry.values import NA

pytestmark = pytest.mark.gpu


def test_real_inventory_matches_torch_and_every_field_is_explained():
    import torch

    from gpulab.core.devices import detect

    reader = TelemetryReader()
    try:
        frame = reader.read()
    finally:
        reader.close()
    inv = frame.inventory.with_worker(detect().to_dict())
    assert inv.available and len(inv.gpus) >= torch.cuda.device_count()
    g = (
        inv.gpu(0)
        if inv.gpus[0].cuda_index == 0
        else next(x for x in inv.gpus if x.cuda_index == 0)
    )
    props = torch.cuda.get_device_properties(0)
    assert g.name == props.name
    assert g.sm_count == props.multi_processor_count
    assert g.compute_capability == f"{props.major}.{props.minor}"
    # torch's total excludes what the driver reserves; NVML's v1 total includes it.
    assert abs(g.memory_total - props.total_memory) < 0.05 * g.memory_total
    if not isinstance(g.memory_bandwidth, NA):
        assert 1e11 < g.memory_bandwidth < 2e13
    s = frame.snapshot(g.nvml_index)
    for name, value in vars(s).items():
        assert value is not None or name == "pid_note", name
        if isinstance(value, NA):
            assert value.reason


def test_this_process_shows_in_the_process_list_or_the_namespace_is_named():
    import torch

    x = torch.ones(256 * 2**20, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    reader = TelemetryReader()
    try:
        s = reader.read().snapshots[0]
    finally:
        reader.close()
    del x
    if isinstance(s.processes, NA):
        pytest.skip(f"this driver gives no process list: {s.processes.reason}")
    mine = s.process(os.getpid())
    assert mine is not None or s.pid_note is not None
    if mine is not None and not isinstance(mine.used_memory, NA):
        assert mine.used_memory >= 256 * 2**20
