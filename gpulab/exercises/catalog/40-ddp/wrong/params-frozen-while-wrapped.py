# expect: the others were ignored or frozen when it was built
# family: property-proxy
"""Shortcut: DDP is built (default group, no hook, every forward through it with sync armed),
but every parameter except the last bias is frozen (requires_grad=False) while DDP is built and
unfrozen after: DDP's reducer knows one bias only; the rest is averaged by hand after backward.
Same weights as DDP."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs, batch_size, lr, log):
    rank, world = dist.get_rank(), dist.get_world_size()
    names = [n for n, _ in model.named_parameters()]
    frozen = [p for n, p in model.named_parameters() if n != names[-1]]
    for p in frozen:
        p.requires_grad_(False)
    ddp = DDP(model)
    for p in frozen:
        p.requires_grad_(True)
    mine = [p for n, p in model.named_parameters() if n != names[-1]]
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size // world, sampler=sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = F.mse_loss(ddp(x), y)
            optimizer.zero_grad()
            loss.backward()
            for p in mine:  # averaged by hand: DDP never saw them
                dist.all_reduce(p.grad)
                p.grad.div_(world)
            optimizer.step()
        if rank == 0:
            log(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()
    return model
