# expect: each rank read the whole dataset
# family: loose-property
"""Wrong: no DDP at all. Every rank runs the single-process loop over the whole dataset (the
same global batches in the same order), so each ends with the right weights, having done the
whole job itself: N ranks, N times the work, no speed-up."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs: int, batch_size: int, lr: float, log) -> torch.nn.Module:
    rank = dist.get_rank()
    sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
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
