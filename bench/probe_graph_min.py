"""Minimal CUDA graph replays of an in-place SGD-with-momentum step against NumPy, to find which
piece a replay gets wrong on this machine. Usage: python3 bench/probe_graph_min.py [expandable]"""

from __future__ import annotations

import os
import sys

import torch

if len(sys.argv) > 1:
    torch.cuda.memory._set_allocator_settings("expandable_segments:" + sys.argv[1])
print("PYTORCH_CUDA_ALLOC_CONF", os.environ.get("PYTORCH_CUDA_ALLOC_CONF"), torch.__version__)
torch.manual_seed(0)
dev = "cuda"


def trial(name, sizes, op, views=False, warm=True):
    total = sum(sizes)
    if views:
        flat_p = torch.randn(total, device=dev)
        flat_g = torch.randn(total, device=dev)
        ps, gs, at = [], [], 0
        for n in sizes:
            ps.append(flat_p[at : at + n])
            gs.append(flat_g[at : at + n])
            at += n
    else:
        ps = [torch.randn(n, device=dev) for n in sizes]
        gs = [torch.randn(n, device=dev) for n in sizes]
    bs = [torch.zeros_like(p) for p in ps]
    lr = torch.zeros((), device=dev)
    p64 = [p.double().clone() for p in ps]
    b64 = [b.double().clone() for b in bs]

    def update():
        for p, g, b in zip(ps, gs, bs, strict=True):
            if op == "momentum":
                b.mul_(0.9).add_(g)
                p.addcmul_(b, lr, value=-1.0)
            elif op == "const":
                p.add_(g, alpha=-0.01)
            elif op == "lr-tensor":
                p.addcmul_(g, lr, value=-1.0)

    if warm:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            update()  # lr = 0: p unchanged for lr ops; const moves p: undone below
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        for b in bs:
            b.zero_()
        if op == "const":
            for p, g in zip(ps, gs, strict=True):
                p.add_(g, alpha=0.01)
        p64 = [p.double().clone() for p in ps]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        update()
    worst = []
    for k, v in enumerate((0.01, 0.02, 0.03)):
        for g in gs:
            g.copy_(torch.randn_like(g))
        lr.fill_(v)
        graph.replay()
        torch.cuda.synchronize()
        bad = 0
        for p, g, p6, b6 in zip(ps, gs, p64, b64, strict=True):
            g6 = g.double()
            if op == "momentum":
                b6.mul_(0.9).add_(g6)
                p6.sub_(v * b6)
            elif op == "const":
                p6.sub_(0.01 * g6)
            else:
                p6.sub_(v * g6)
            bad += int((~torch.isclose(p.double(), p6, rtol=1e-5, atol=1e-5)).sum())
        worst.append(bad)
        if k == 0 and bad:
            i = 0
            print(f"   {name} call 1, t0[:3]: got {ps[i][:3].tolist()} want {p64[i][:3].tolist()}")
    print(f"{name}: wrong after calls 1-3 of {total}: {worst}")


small = [int(x) for x in torch.randint(16, 25000, (64,))]
trial("1 tensor momentum", [1000], "momentum")
trial("1 tensor lr-tensor", [1000], "lr-tensor")
trial("1 tensor const", [1000], "const")
trial("64 tensors momentum", small, "momentum")
trial("64 tensors const", small, "const")
trial("64 views momentum", small, "momentum", views=True)
trial("64 tensors momentum no warm", small, "momentum", warm=False)
