# why: no DataLoader: the sampler's indices read by hand, SGD written out
"""Unusual but correct: no DataLoader. The DistributedSampler's indices are read one by one with
dataset[i] and stacked by hand into per-rank batches; DDP with gradient_as_bucket_view and
static_graph; Adam-free plain SGD written as p -= lr * p.grad under no_grad."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, *, epochs, batch_size, lr, log):
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = DDP(model, gradient_as_bucket_view=True, static_graph=True)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    per = batch_size // world
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        idx = list(sampler)
        for b in range(0, len(idx), per):
            rows = [dataset[i] for i in idx[b : b + per]]
            x = torch.stack([r[0] for r in rows])
            y = torch.stack([r[1] for r in rows])
            for p in ddp.parameters():
                p.grad = None
            loss = F.mse_loss(ddp(x), y)
            loss.backward()
            with torch.no_grad():
                for p in ddp.parameters():
                    p -= lr * p.grad
        if rank == 0:
            log(f"epoch {epoch}: {loss.item():.4f}")
    dist.destroy_process_group()
    return model
