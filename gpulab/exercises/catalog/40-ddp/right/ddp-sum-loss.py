# why: a summed loss under DDP, scaled by hand to the mean DDP averages
"""Unusual but correct: DDP, with the loss as a sum over the rank's rows scaled by
1 / (rows on this rank) by hand (the same mean), and a BatchSampler over the DistributedSampler
instead of batch_size= on the loader."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import BatchSampler, DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs, batch_size, lr, log):
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = DDP(model)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    batches = BatchSampler(sampler, batch_size // world, drop_last=False)
    loader = DataLoader(dataset, batch_sampler=batches)
    opt = torch.optim.SGD(ddp.parameters(), lr=lr)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = ((ddp(x) - y) ** 2).sum() / y.numel()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            log(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()
    return model
