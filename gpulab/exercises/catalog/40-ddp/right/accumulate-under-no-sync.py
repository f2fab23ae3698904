# why: two micro-batches a step, the first under no_sync()
"""Unusual but correct: gradient accumulation. Each rank's per-step batch of 8 is run as 2
micro-batches of 4, the first inside ddp.no_sync() (no all-reduce), the second outside (DDP then
averages the accumulated gradients); each micro-batch loss halved. find_unused_parameters and
broadcast_buffers=False for variety."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs, batch_size, lr, log):
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = DDP(model, broadcast_buffers=False, find_unused_parameters=True)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size // world, sampler=sampler)
    opt = torch.optim.SGD(ddp.parameters(), lr=lr)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            xs, ys = x.chunk(2), y.chunk(2)
            with ddp.no_sync():
                (F.mse_loss(ddp(xs[0]), ys[0]) / 2).backward()
            loss = F.mse_loss(ddp(xs[1]), ys[1]) / 2
            loss.backward()
            opt.step()
        if rank == 0:
            log(f"epoch {epoch}")
    dist.destroy_process_group()
    return ddp.module
