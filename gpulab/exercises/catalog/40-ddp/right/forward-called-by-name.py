# why: calls ddp.forward(x) by name, past nn.Module's __call__ and its hooks: DDP's own forward still arms the all-reduce
"""Unusual but correct: the reference loop with the wrapper's forward called by name. nn.Module's
__call__ (and any module hooks on the wrapper) is skipped, but DDP's forward itself prepares the
reducer for the backward, so the gradients are averaged as in ddp(x). Rejected before the fix
("past DistributedDataParallel"): the check counted forwards by the wrapper's module hooks."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs: int, batch_size: int, lr: float, log) -> torch.nn.Module:
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = DDP(model)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size // world, sampler=sampler)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=lr)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
        for x, y in loader:
            loss = F.mse_loss(ddp.forward(x), y)
            optimizer.zero_grad()
            loss.backward()  # DDP averages the gradients over the ranks here
            optimizer.step()
        if rank == 0:
            log(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()
    return model
