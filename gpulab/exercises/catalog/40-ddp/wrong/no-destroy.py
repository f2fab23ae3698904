# expect: destroy_process_group
# family: mistake
"""Wrong on purpose: no-destroy."""

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
            loss = F.mse_loss(ddp(x), y)
            optimizer.zero_grad()
            loss.backward()  # DDP averages the gradients over the ranks here
            optimizer.step()
        if rank == 0:
            log(f"epoch {epoch}: loss {loss.item():.4f}")
    return model
