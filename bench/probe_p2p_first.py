"""What NCCL's first point-to-point calls cost after a group's first all-reduce (the warm-up a
rank standing by does, gpulab.core.ranks._warm): a batched exchange with both ring neighbours,
then lone isend/irecv pairs, each timed on its first and second use.
Usage: python3 bench/probe_p2p_first.py WORLD"""

import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _timed(what, fn, rank):
    torch.cuda.synchronize()
    dist.barrier()
    t = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    took = time.perf_counter() - t
    if rank == 0:
        print(f"{what}: {took * 1e3:.1f} ms", flush=True)


def main(rank, world):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29555")
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    t = time.perf_counter()
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    dist.all_reduce(torch.zeros(1, device=dev))
    torch.cuda.synchronize()
    if rank == 0:
        print(f"init + first all_reduce: {(time.perf_counter() - t) * 1e3:.0f} ms", flush=True)
    right, left = (rank + 1) % world, (rank - 1) % world
    a, b = torch.ones(1 << 20, device=dev), torch.empty(1 << 20, device=dev)

    def batched():
        ops = [dist.P2POp(dist.isend, a, right), dist.P2POp(dist.irecv, b, left)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()

    def lone():
        if rank % 2 == 0:
            dist.send(a, right)
            dist.recv(b, left)
        else:
            dist.recv(b, left)
            dist.send(a, right)

    for what, fn in (
        ("batched ring 1st", batched),
        ("batched ring 2nd", batched),
        ("lone send/recv 1st", lone),
        ("lone send/recv 2nd", lone),
    ):
        _timed(what, fn, rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    w = int(sys.argv[1])
    mp.spawn(main, args=(w,), nprocs=w)
