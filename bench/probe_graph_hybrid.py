"""cuda-graphs' check data through a minimal graph, one factor changed at a time (see
probe_graph_min.py, which passes with random data). Usage: python3 bench/probe_graph_hybrid.py"""

from __future__ import annotations

import importlib.util

import numpy as np
import torch

from gpulab.exercises import api
from gpulab.exercises.loader import load_catalog

ex = load_catalog().get("cuda-graphs")
spec = importlib.util.spec_from_file_location("cg_check", ex.check_path)
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)
c = api.Context(rng=np.random.default_rng(7), seed=7, gpu=True, cupy=False, device="cuda:0")
a = check.cases(c)[0].args
shapes = [tuple(s) for s in a["shapes"]]
flat_shapes = [(int(np.prod(s)),) for s in shapes]
m = 0.9


def trial(name, shp, data, lrs, grads_by):
    if data == "check":
        ps = check._split(torch.from_numpy(a["p0"]).cuda(), shp)
        gs = check._split(torch.from_numpy(a["g_make"]).cuda(), shp)
    else:
        ps = [torch.randn(s, device="cuda") for s in shp]
        gs = [torch.randn(s, device="cuda") for s in shp]
    bs = [torch.zeros_like(p) for p in ps]
    lr = torch.zeros((), device="cuda")
    p6 = [p.double().clone() for p in ps]
    b6 = [b.double().clone() for b in bs]

    def update():
        for p, g, b in zip(ps, gs, bs, strict=True):
            b.mul_(m).add_(g)
            p.addcmul_(b, lr, value=-1.0)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        update()
    hist = torch.from_numpy(a["grads"]).cuda()
    out = []
    for k in range(3):
        new = (
            check._split(hist[k], shp) if grads_by == "split" else [torch.randn_like(g) for g in gs]
        )
        for g, n in zip(gs, new, strict=True):
            g.copy_(n)
        v = float(a["lrs"][k]) if lrs == "check" else 0.01 * (k + 1)
        lr.fill_(v)
        graph.replay()
        torch.cuda.synchronize()
        bad = 0
        for p, g, q, b in zip(ps, gs, p6, b6, strict=True):
            b.mul_(m).add_(g.double())
            q.sub_(v * b)
            bad += int((~torch.isclose(p.double(), q, rtol=1e-5, atol=1e-5)).sum())
        out.append(bad)
    print(f"{name}: {out}")


trial("all check (2-D, check data, check lrs, split grads)", shapes, "check", "check", "split")
trial("1-D shapes", flat_shapes, "check", "check", "split")
trial("random data", shapes, "random", "check", "split")
trial("lrs 0.01k", shapes, "check", "fixed", "split")
trial("grads randn", shapes, "check", "check", "randn")
trial("random everything 2-D", shapes, "random", "fixed", "randn")
