"""Expert solution: the ring with every step's send and receive as one group, one scratch buffer.

What was tried and measured (2 H200s over NVLink, 1 GiB a rank, busbw against NCCL's all_reduce in
the same rounds, `bench/collective_expert.py`): cutting each chunk into pieces, so that adding
one piece would overlap the transfer of the next, made it slower, not faster: 1 piece 0.944 of
NCCL, 2 pieces 0.826, 4 0.792, 8 0.736, 16 0.663. NCCL runs one rank's sends, receives and
groups in order on one stream, so pieces overlap nothing a whole chunk does not; each costs a
launch and a smaller, slower transfer. What NCCL keeps over any ring written from send and recv
is its reduction fused into the transfer (it adds as the data arrives, where here every chunk
lands in scratch and is read back from memory to be added): the last few percent.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def ring_all_reduce(t: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    if world == 1:
        return
    right, left = (rank + 1) % world, (rank - 1) % world
    chunks = t.tensor_split(world)
    scratch = torch.empty_like(chunks[0])

    def exchange(send: torch.Tensor, into: torch.Tensor) -> None:
        ops = [dist.P2POp(dist.isend, send, right), dist.P2POp(dist.irecv, into, left)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()

    for s in range(world - 1):  # reduce-scatter: the left's running sum lands in scratch
        into = chunks[(rank - s - 1) % world]
        got = scratch[: into.numel()]
        exchange(chunks[(rank - s) % world], got)
        into.add_(got)
    for s in range(world - 1):  # all-gather: each finished chunk lands where it belongs
        exchange(chunks[(rank + 1 - s) % world], chunks[(rank - s) % world])
