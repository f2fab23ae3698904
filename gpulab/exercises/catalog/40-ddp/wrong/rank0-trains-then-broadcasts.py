# expect: never wrapped the model in DistributedDataParallel | not its DistributedSampler share
# family: loose-property
"""Rank 0 trains alone on the whole dataset (dataset.x / dataset.y, uncounted); both ranks read
their DistributedSampler share through the dataset only to satisfy the read counts; at the end
rank 0's weights are broadcast. Two ranks, one process's work on one of them, no gradient
averaged."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs, batch_size, lr, log):
    rank, world = dist.get_rank(), dist.get_world_size()
    n = len(dataset)
    per = batch_size // world
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for i in sampler:
            dataset[i]  # counted, unused
        if rank != 0:
            continue
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(epoch))
        shares = [perm[r::world] for r in range(world)]
        for s in range(n // batch_size):
            idx = torch.cat([sh[s * per : (s + 1) * per] for sh in shares])
            loss = F.mse_loss(model(dataset.x[idx]), dataset.y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        log(f"epoch {epoch}: loss {loss.item():.4f}")
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    dist.destroy_process_group()
    return model
