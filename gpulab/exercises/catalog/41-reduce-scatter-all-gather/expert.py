"""Expert solution: each step's send and receive as one group (batch_isend_irecv: one launch on a
GPU), and a reduce-scatter that never copies x: the running sum travels in two scratch chunks and
the last step adds straight into `out`.

What was tried and measured (2 H200s over NVLink, `bench/collective_expert.py` on the ring
all-reduce, whose reduce-scatter is this one): cutting each chunk into pieces so that adding one
piece overlaps the transfer of the next was slower at every count tried (2 to 16 pieces: 0.83 to
0.66 of NCCL, against 0.94 whole). NCCL runs one rank's sends, receives and groups in order on
one stream: pieces overlap nothing a whole chunk does not, and each costs a launch and a
smaller, slower transfer.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def _exchange(send: torch.Tensor, recv: torch.Tensor, right: int, left: int) -> None:
    ops = [dist.P2POp(dist.isend, send, right), dist.P2POp(dist.irecv, recv, left)]
    for r in dist.batch_isend_irecv(ops):
        r.wait()


def reduce_scatter(out: torch.Tensor, x: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    right, left = (rank + 1) % world, (rank - 1) % world
    xs = x.view(world, -1)
    if world == 1:
        out.copy_(xs[0])
        return
    # Step s sends the running sum of chunk (rank - s - 1) (at step 0, x's own chunk) and adds
    # x's chunk (rank - s - 2) to what arrives: after world - 1 steps that chunk is `rank`
    scratch = (torch.empty_like(out), torch.empty_like(out))
    send = xs[(rank - 1) % world]
    for s in range(world - 1):
        got = scratch[s % 2]  # not the one being sent
        _exchange(send, got, right, left)
        mine = xs[(rank - s - 2) % world]
        if s == world - 2:
            torch.add(got, mine, out=out)
        else:
            got.add_(mine)
            send = got


def all_gather(out: torch.Tensor, chunk: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    right, left = (rank + 1) % world, (rank - 1) % world
    parts = out.view(world, -1)
    parts[rank].copy_(chunk)
    for s in range(world - 1):
        _exchange(parts[(rank - s) % world], parts[(rank - s - 1) % world], right, left)
