# expect: communication hook of yours
# family: loose-property
"""ddp training"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def _noop(state, bucket):
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())  # DDP's all-reduce replaced by nothing
    return fut


def train(model, dataset, *, epochs, batch_size, lr, log):
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = DDP(model)
    ddp.register_comm_hook(None, _noop)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size // world, sampler=sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.mse_loss(ddp(x), y)
            loss.backward()
            for p in model.parameters():  # ... averaged by hand
                dist.all_reduce(p.grad)
                p.grad /= world
            optimizer.step()
        if rank == 0:
            log(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()
    return model
