# expect: averages 1 of the model's 4 parameters
# family: writes-what-check-reads
"""Shortcut: DDP told to ignore every parameter but the last bias (its reducer averages that one
only), the rest all-reduced and averaged by hand after backward; then the wrapper's own record
of what it averages, ddp._module_parameters, is written back to the whole model, so a check that
reads that attribute as each forward runs sees every parameter under DDP. Same weights as DDP."""

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
    ddp._module_parameters = list(model.parameters())
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
            for p in mine:
                dist.all_reduce(p.grad)
                p.grad.div_(world)
            optimizer.step()
        if rank == 0:
            log(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()
    return model
