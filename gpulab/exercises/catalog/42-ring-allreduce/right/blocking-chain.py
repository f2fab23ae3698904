# why: blocking send and recv, rank 0 sending first and the others receiving first
"""Correct: a ring from blocking dist.send / dist.recv only, deadlock-free by order: rank 0 sends
then receives, every other rank receives then sends (the message travels the ring as a chain),
2(world-1) steps."""

import torch
import torch.distributed as dist


def ring_all_reduce(t: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    if world == 1:
        return
    right, left = (rank + 1) % world, (rank - 1) % world
    chunks = t.tensor_split(world)
    scratch = torch.empty_like(chunks[0])

    def step(send, into):
        if rank == 0:
            dist.send(send.contiguous(), right)
            dist.recv(into, left)
        else:
            buf = torch.empty_like(into)
            dist.recv(buf, left)
            dist.send(send.contiguous(), right)
            into.copy_(buf)

    for s in range(world - 1):
        into = chunks[(rank - s - 1) % world]
        got = scratch[: into.numel()]
        step(chunks[(rank - s) % world], got)
        into += got
    for s in range(world - 1):
        step(chunks[(rank + 1 - s) % world], chunks[(rank - s) % world])
