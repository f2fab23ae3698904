# expect: never ran a forward through the wrapper | never wrapped the model in DistributedDataParallel
# family: property-proxy
"""Wrong for this exercise: the gradients averaged by hand (all_reduce of every .grad), with a
DistributedDataParallel built around the model and thrown away, so the check sees the wrap; the
training never goes through it, and its hooks, never prepared by its forward, do nothing."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs: int, batch_size: int, lr: float, log) -> torch.nn.Module:
    rank, world = dist.get_rank(), dist.get_world_size()
    DistributedDataParallel(model)  # built for the check to see, never called
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size // world, sampler=sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
                p.grad /= world
            optimizer.step()
        if rank == 0:
            log(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()
    return model
