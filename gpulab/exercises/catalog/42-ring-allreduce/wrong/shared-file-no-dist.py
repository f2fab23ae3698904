# expect: the data moved between the ranks another way
# family: escape
"""Shortcut: no torch.distributed call at all inside the learner's call: the ranks (siblings on
one host) share a /dev/shm file with a slot per rank plus a counter per rank; each writes its t,
bumps its counter, spins until every counter caught up, sums the slots into t, spins again."""

import contextlib
import mmap
import os
import time

import numpy as np
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


def _get(world, n):
    key = (world, n)
    if key not in _maps:
        path = f"/dev/shm/rt5s-{os.getppid()}-{world}-{n}"
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        size = 64 + world * n * 4
        os.ftruncate(fd, size)
        m = mmap.mmap(fd, size)
        _paths.add(path)
        os.close(fd)
        cnt = np.frombuffer(m, dtype=np.int64, count=world)
        buf = torch.frombuffer(m, dtype=torch.float32, count=world * n, offset=64).view(world, n)
        _maps[key] = [m, cnt, buf, 0]
    return _maps[key]


def _sync(e, rank, gen):
    cnt = e[1]
    cnt[rank] = gen
    while int(cnt.min()) < gen:
        time.sleep(0)


def ring_all_reduce(t: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    n = t.numel()
    if world == 1 or n == 0:
        return
    e = _get(world, n)
    e[2][rank].copy_(t)
    e[3] += 2
    _sync(e, rank, e[3] - 1)
    torch.sum(e[2], 0, out=t) if t.device.type == "cpu" else t.copy_(e[2].sum(0))
    _sync(e, rank, e[3])
    _tidy()
