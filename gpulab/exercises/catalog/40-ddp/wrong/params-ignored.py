# expect: averages 1 of the model's 4 parameters
# family: property-proxy
"""Shortcut: DDP is built (default group, no hook, every forward through it with sync armed),
but told to ignore every parameter but the last bias (DDP._set_params_and_buffers_to_ignore_for_model,
a public-looking static method): its reducer all-reduces one bias, and the rest of the gradients
are all-reduced and averaged by hand after backward. Same weights as DDP."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs, batch_size, lr, log):
    rank, world = dist.get_rank(), dist.get_world_size()
    names = [n for n, _ in model.named_parameters()]
    DDP._set_params_and_buffers_to_ignore_for_model(model, names[:-1])
    ddp = DDP(model)
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
