"""gpulab.exercises.freed: the plan that takes every free block of the caching allocator's shared
pools (on the CPU, from hand-made snapshots), and, under -m gpu, a graph replaying on a buffer
freed after capture seen by its writes and its reads, and one whose buffers are held not seen."""

from __future__ import annotations

import pytest

from gpulab.exercises.freed import POISON, SMALL, FreedMemory, Request, plan


def _seg(stream, kind, blocks, *, device=0, pool=(0, 0)):
    return {
        "device": device,
        "stream": stream,
        "segment_type": kind,
        "segment_pool_id": pool,
        "blocks": [{"size": size, "state": state} for size, state in blocks],
    }


def test_plan_takes_only_free_blocks_of_the_shared_pools_on_the_device():
    segments = [
        _seg(0, "small", [(512, "active_allocated"), (4096, "inactive"), (1024, "inactive")]),
        _seg(7, "large", [(3 * SMALL, "inactive"), (SMALL * 2, "active_awaiting_free")]),
        _seg(0, "small", [(8192, "inactive")], pool=(1, 2)),  # a graph's own pool
        _seg(0, "large", [(5 * SMALL, "inactive")], device=1),
    ]
    assert plan(segments, 0) == [Request(0, 4096), Request(0, 1024), Request(7, 3 * SMALL)]
    assert plan(segments, 1) == [Request(0, 5 * SMALL)]


def test_plan_cuts_a_large_free_block_of_a_small_segment_into_small_requests():
    # a request over 1 MiB goes to the large pool, where this block is not
    got = plan([_seg(0, "small", [(SMALL + SMALL // 2, "inactive")])], 0)
    assert got == [Request(0, SMALL), Request(0, SMALL // 2)]
    assert all(r.nbytes <= SMALL for r in got)


def test_the_pattern_is_a_nan_as_a_float_and_not_the_canonical_one():
    import numpy as np

    torch = pytest.importorskip("torch")
    held = torch.empty(8, dtype=torch.int32)
    held.fill_(POISON)  # as FreedMemory fills what it holds
    assert np.isnan(held.numpy().view(np.float32)).all()
    assert int(held.numpy().view(np.uint32)[0]) == POISON
    # CUDA's arithmetic returns the canonical NaN: a replay that writes NaN here still shows
    assert POISON not in (0x7FFFFFFF, 0x7FC00000)


def _graph_on_a_buffer(torch, *, keep: bool):
    """A graph that does buf = 0.9 * buf + x and y += buf, with buf held or dropped."""
    x = torch.ones(4096, device="cuda")
    y = torch.zeros(4096, device="cuda")

    def make():
        buf = torch.zeros(4096, device="cuda")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            buf.mul_(0.9).add_(x)
        torch.cuda.current_stream().wait_stream(side)
        buf.zero_()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            buf.mul_(0.9).add_(x)
            y.add_(buf)
        return graph, (buf if keep else None)

    graph, held = make()
    return graph, (held, x), y  # x is read by every replay: held in both cases


@pytest.mark.gpu
@pytest.mark.parametrize("keep", [False, True])
def test_a_replay_on_a_freed_buffer_is_seen_and_a_held_one_is_not(keep):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    graph, held, y = _graph_on_a_buffer(torch, keep=keep)
    with FreedMemory("cuda:0") as freed:
        graph.replay()
        torch.cuda.synchronize()
        wrote = freed.written()
        nan = bool(torch.isnan(y).any())
    if keep:
        assert wrote == 0 and not nan and float(y[0]) == 1.0
    else:
        assert wrote >= 4 * 4096 and nan, (wrote, nan)
    del held


class _Allocator:
    """A stand-in for torch.cuda's caching allocator: one free block planned, and a request for
    it that misses and finds no room on the device (what an H200 did after other checks)."""

    class OutOfMemoryError(RuntimeError):
        pass

    def __init__(self, segments):
        self.segments = segments
        self.emptied = 0
        self.asked: list[int] = []
        self.cuda = self

    def synchronize(self, device=None):
        pass

    def empty_cache(self):
        self.emptied += 1

    def memory_snapshot(self):
        return self.segments

    def memory_reserved(self, device=None):
        return 0

    def current_device(self):
        return 0

    def default_stream(self, device=None):
        return type("Stream", (), {"cuda_stream": 0})()

    def stream(self, s):
        import contextlib

        return contextlib.nullcontext()

    int32 = "int32"

    def empty(self, n, dtype=None, device=None):
        self.asked.append(4 * n)
        raise self.OutOfMemoryError("CUDA out of memory. Tried to allocate 32.00 GiB")


def test_a_block_the_device_cannot_place_again_is_left_and_the_check_goes_on():
    fake = _Allocator([_seg(0, "large", [(32 << 30, "inactive")])])
    freed = FreedMemory.__new__(FreedMemory)
    freed.torch, freed.device, freed.held = fake, type("Dev", (), {"index": 0})(), []
    with freed:  # would raise the allocator's OutOfMemoryError without the fix
        pass
    assert fake.asked == [32 << 30]  # the block was asked for, once: no pass after a miss
    assert fake.emptied == 2  # the unused cache before holding, and after the miss
    assert freed.held == [] and freed.written() == 0


def test_a_large_held_block_is_compared_a_chunk_at_a_time(monkeypatch):
    """written() on a held block never makes a mask the block's size: it is counted a CHUNK at a
    time (on an H200 a 64 GiB held block asked for a 16 GiB mask with 5 GiB free), and every
    changed element is still counted, across chunk edges too."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from gpulab.exercises import freed as freed_mod

    monkeypatch.setattr(freed_mod, "CHUNK", 1000)
    block = torch.full((10, 1000), POISON, dtype=torch.int32)  # 10,000 elements: ten chunks
    changed = [0, 999, 1000, 5555, 9999]
    block.view(-1)[changed] = 7
    freed = FreedMemory.__new__(FreedMemory)
    freed.torch, freed.device, freed.held = torch, torch.device("cpu"), [block]

    class Largest(TorchDispatchMode):
        most = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if isinstance(out, torch.Tensor) and out.dtype == torch.bool:  # a mask
                Largest.most = max(Largest.most, out.numel())
            return out

    with Largest():
        wrote = freed.written()
    assert wrote == 4 * len(changed)
    assert 0 < Largest.most <= 1000  # masks were made, none larger than a chunk
