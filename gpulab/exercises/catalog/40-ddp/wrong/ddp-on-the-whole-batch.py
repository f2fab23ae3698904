# expect: not its DistributedSampler share
# family: loose-property
"""Wrong: DDP and a DistributedSampler, each rank reading its share through the dataset, but the
forward runs on both ranks' samples: every rank trains on the whole global batch (read from the
dataset's own tensors), so DDP averages two copies of the same gradient."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs, batch_size, lr, log):
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = DDP(model)
    samplers = [DistributedSampler(dataset, world, r, shuffle=True, seed=0) for r in range(world)]
    optimizer = torch.optim.SGD(ddp.parameters(), lr=lr)
    per = batch_size // world
    for epoch in range(epochs):
        for s in samplers:
            s.set_epoch(epoch)
        shares = [list(s) for s in samplers]
        for b in range(len(shares[rank]) // per):
            mine = shares[rank][b * per : (b + 1) * per]
            for i in mine:
                dataset[i]  # the reads a share makes, counted
            idx = [i for share in shares for i in share[b * per : (b + 1) * per]]
            x, y = dataset.x[idx], dataset.y[idx]
            loss = F.mse_loss(ddp(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            log(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()
    return model
