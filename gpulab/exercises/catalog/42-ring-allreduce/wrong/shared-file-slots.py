# expect: the data moved between the ranks another way
# family: escape
"""Shortcut: the data moves through a file in /dev/shm that every rank process maps (they are
siblings on one host); only 1-value tokens go through dist (batch_isend_irecv) as barriers. No
ring: each rank writes its t into its slot, waits, sums all slots into t, waits."""

import contextlib
import mmap
import os

import torch
import torch.distributed as dist

_paths: set = set()


def _tidy():
    # Every rank mapped the file before the first meeting point: its name can go (the mapping
    # outlives it), so nothing is left in /dev/shm
    for path in list(_paths):
        with contextlib.suppress(OSError):
            os.unlink(path)
        _paths.discard(path)


_maps = {}


def _slots(world, n):
    key = (world, n)
    if key not in _maps:
        path = f"/dev/shm/rt5-{os.getppid()}-{world}-{n}"
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        size = max(world * n * 4, 4)
        os.ftruncate(fd, size)
        m = mmap.mmap(fd, size)
        _paths.add(path)
        os.close(fd)
        buf = torch.frombuffer(m, dtype=torch.float32, count=world * n).view(world, n)
        _maps[key] = (m, buf)
    return _maps[key][1]


def _barrier(device):
    rank, world = dist.get_rank(), dist.get_world_size()
    ops, keep = [], []
    for p in range(world):
        if p == rank:
            continue
        a, b = torch.zeros(1, device=device), torch.zeros(1, device=device)
        keep += [a, b]
        ops += [dist.P2POp(dist.isend, a, p), dist.P2POp(dist.irecv, b, p)]
    for r in dist.batch_isend_irecv(ops):
        r.wait()
    if device.type == "cuda":
        # On NCCL wait() only orders the stream: the host must see every rank's slot written
        torch.cuda.synchronize(device)


def ring_all_reduce(t: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    n = t.numel()
    if world == 1 or n == 0:
        return
    s = _slots(world, n)
    s[rank].copy_(t)
    _barrier(t.device)
    torch.sum(s, 0, out=t) if t.device.type == "cpu" else t.copy_(s.sum(0))
    _barrier(t.device)
    _tidy()
