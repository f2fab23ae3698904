# expect: forward, where its reducer is told to expect the backward, never ran
# family: property-proxy
"""Shortcut: a DistributedDataParallel subclass whose forward calls the wrapped module straight
away, past DDP's own forward (_pre_forward and _post_forward, where the reducer is told to expect
the backward pass): the wrapper is built over the whole default group with no hook, every
training forward is a call of the wrapper with its sync flag on, yet the reducer all-reduces
nothing; the gradients are averaged by hand after backward. Same weights as DDP. Before the
fix: pass (the check counted forwards by the wrapper's module hooks, which run for any forward)."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Wrapper(DDP):
    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def train(model, dataset, *, epochs, batch_size, lr, log):
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = Wrapper(model)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size // world, sampler=sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = F.mse_loss(ddp(x), y)
            optimizer.zero_grad()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad.div_(world)
            optimizer.step()
        if rank == 0:
            log(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()
    return model
