# why: a BatchSampler over the DistributedSampler, gradient_as_bucket_view, static_graph
"""Correct: DDP with gradient_as_bucket_view=True and static_graph=True, the DistributedSampler
wrapped in a BatchSampler handed to the DataLoader as batch_sampler, zero_grad(set_to_none=True)
through the DDP wrapper's parameters."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import BatchSampler, DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs, batch_size, lr, log):
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = DDP(model, gradient_as_bucket_view=True, static_graph=True)
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=0)
    batches = BatchSampler(sampler, batch_size // world, drop_last=False)
    loader = DataLoader(dataset, batch_sampler=batches)
    opt = torch.optim.SGD(ddp.parameters(), lr=lr)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        total = 0.0
        for x, y in loader:
            opt.zero_grad(set_to_none=True)
            loss = F.mse_loss(ddp(x), y)
            loss.backward()
            opt.step()
            total += loss.item()
        if rank == 0:
            log(f"epoch {epoch}: mean loss {total / len(loader):.4f}")
    dist.barrier()
    dist.destroy_process_group()
    return ddp.module
