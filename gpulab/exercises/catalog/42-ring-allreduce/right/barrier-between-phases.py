# why: a dist.barrier() between the reduce-scatter and the all-gather phases
"""ring all-reduce, with a barrier between the phases (correct)"""

import torch
import torch.distributed as dist


def _exchange(send, recv, right, left):
    ops = [dist.P2POp(dist.isend, send, right), dist.P2POp(dist.irecv, recv, left)]
    for r in dist.batch_isend_irecv(ops):
        r.wait()


def ring_all_reduce(t: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    if world == 1:
        return
    right, left = (rank + 1) % world, (rank - 1) % world
    chunks = t.tensor_split(world)
    scratch = torch.empty_like(chunks[0])
    for s in range(world - 1):
        out, into = chunks[(rank - s) % world], chunks[(rank - s - 1) % world]
        got = scratch[: into.numel()]
        _exchange(out, got, right, left)
        into += got
    dist.barrier()
    for s in range(world - 1):
        _exchange(chunks[(rank + 1 - s) % world], chunks[(rank - s) % world], right, left)
    dist.barrier()
