# expect: inside ddp.no_sync()
# family: loose-property
"""Wrong for this exercise: the model is wrapped in DDP and every forward goes through the
wrapper, but every step runs inside ddp.no_sync(), so DDP's hooks all-reduce nothing; the
gradients are averaged by hand (all_reduce of each .grad, divided by the world size), the thing
the exercise says is not the skill."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs, batch_size, lr, log):
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = DDP(model)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size // world, sampler=sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            with ddp.no_sync():  # DDP's all-reduce switched off
                loss = F.mse_loss(ddp(x), y)
                loss.backward()
            for p in model.parameters():  # ... and done by hand
                dist.all_reduce(p.grad)
                p.grad /= world
            optimizer.step()
        if rank == 0:
            log(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()
    return model
