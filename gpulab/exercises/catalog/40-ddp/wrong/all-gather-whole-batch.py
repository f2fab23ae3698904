# expect: never wrapped the model in DistributedDataParallel | not its DistributedSampler share
# family: loose-property
"""No DDP: each rank reads exactly its DistributedSampler share (the read counts are right), then
all_gathers the other rank's samples and trains its own copy of the model on the whole global
batch. Both ranks take the single process's steps, so their weights agree with each other and
with the reference, without any gradient being averaged."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs, batch_size, lr, log):
    rank, world = dist.get_rank(), dist.get_world_size()
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size // world, sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            xs = [torch.empty_like(x) for _ in range(world)]
            ys = [torch.empty_like(y) for _ in range(world)]
            dist.all_gather(xs, x)
            dist.all_gather(ys, y)
            loss = F.mse_loss(model(torch.cat(xs)), torch.cat(ys))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            log(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()
    return model
