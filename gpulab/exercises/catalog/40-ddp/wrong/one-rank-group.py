# expect: built DistributedDataParallel over a group of 1
# family: property-proxy
"""Shortcut (6, DDP's averaging faked): wrap the model in DDP over a process group of ONE rank
(dist.new_group([rank]) for each rank), so the wrapper, its forward and its 'synced' backward are
all there but DDP's hooks all-reduce over nobody; the gradients are then averaged by hand
(all_reduce of every .grad on the world group / world) -- the thing the exercise says is not the
skill. No comm hook, no no_sync."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs, batch_size, lr, log):
    rank, world = dist.get_rank(), dist.get_world_size()
    solo = [dist.new_group([r]) for r in range(world)][rank]
    ddp = DDP(model, process_group=solo)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size // world, sampler=sampler)
    opt = torch.optim.SGD(ddp.parameters(), lr=lr)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = F.mse_loss(ddp(x), y)
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= world
            opt.step()
        if rank == 0:
            log(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()
    return model
