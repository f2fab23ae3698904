# expect: gradients were not averaged | never wrapped the model in DistributedDataParallel
# family: mistake
"""Wrong: each rank trains on its DistributedSampler share, but without DDP: nothing averages the
gradients, so the ranks drift apart, each fitting half the data."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs: int, batch_size: int, lr: float, log) -> torch.nn.Module:
    rank, world = dist.get_rank(), dist.get_world_size()
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size // world, sampler=sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            log(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()
    return model
