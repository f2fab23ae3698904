"""Where cuda-graphs' reference parts ways with the check's float64 trajectory on a GPU: the
update stepped three calls by hand, eagerly and through graphs captured in several ways, each
against NumPy; the wrong values counted per tensor. Usage: python3 bench/probe_cuda_graphs.py"""

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
case = check.cases(c)[0]
a = case.args
want = check.expected(case, c)
shapes = [tuple(s) for s in a["shapes"]]
m = float(a["momentum"])


def fresh():
    p = check._split(torch.from_numpy(a["p0"]).cuda(), shapes)
    g = check._split(torch.from_numpy(a["g_make"]).cuda(), shapes)
    return p, g


def make(p, g, *, warm, sync, op, mode, bufs_on_side):
    bufs = [torch.zeros_like(x) for x in p]
    lr = torch.zeros((), device="cuda")

    def update():
        for x, gg, b in zip(p, g, bufs, strict=True):
            b.mul_(m).add_(gg)
            if op == "addcmul":
                x.addcmul_(b, lr, value=-1.0)
            else:
                x.sub_(b * lr)

    if mode == "eager":

        def step(v):
            lr.fill_(v)
            update()

        return step
    if warm:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            update()
            if bufs_on_side:
                for b in bufs:
                    b.zero_()
        torch.cuda.current_stream().wait_stream(side)
        if not bufs_on_side:
            for b in bufs:
                b.zero_()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, capture_error_mode=mode):
        update()

    def step(v):
        lr.fill_(v)
        if sync:
            torch.cuda.synchronize()
        graph.replay()

    return step


VARIANTS = {
    "eager": dict(warm=False, sync=False, op="addcmul", mode="eager", bufs_on_side=True),
    "solution": dict(warm=True, sync=False, op="addcmul", mode="global", bufs_on_side=True),
    "no warm-up": dict(warm=False, sync=False, op="addcmul", mode="global", bufs_on_side=True),
    "sync before replay": dict(
        warm=True, sync=True, op="addcmul", mode="global", bufs_on_side=True
    ),
    "sub_(b*lr)": dict(warm=True, sync=False, op="sub", mode="global", bufs_on_side=True),
    "thread_local": dict(
        warm=True, sync=False, op="addcmul", mode="thread_local", bufs_on_side=True
    ),
    "zero on main": dict(warm=True, sync=False, op="addcmul", mode="global", bufs_on_side=False),
}
hist = torch.from_numpy(a["grads"]).cuda()
for name, kw in VARIANTS.items():
    p, g = fresh()
    try:
        step = make(p, g, **kw)
        line = []
        for k in range(3):
            for gg, new in zip(g, check._split(hist[k], shapes), strict=True):
                gg.copy_(new)
            step(float(a["lrs"][k]))
            torch.cuda.synchronize()
            got = check._flat(p)
            bad = ~np.isclose(got, want[k], rtol=1e-5, atol=1e-5)
            line.append(f"call {k + 1}: {int(bad.sum())} wrong")
            if k == 0 and bad.any():
                at, per = 0, []
                for i, s in enumerate(shapes):
                    n = int(np.prod(s))
                    w = int(bad[at : at + n].sum())
                    if w:
                        per.append(f"t{i}{s}:{w}/{n}")
                    at += n
                line.append("tensors " + " ".join(per[:12]) + f" ({len(per)} tensors)")
        print(f"{name}: " + "; ".join(line))
    except Exception as e:  # noqa: BLE001 - a probe prints why a variant failed and goes on
        print(f"{name}: raised {type(e).__name__}: {str(e)[:200]}")
print(torch.__version__, torch.version.cuda)
