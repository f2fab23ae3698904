"""cuda-graphs' update captured in several ways, each in a fresh process, on the check's data
(seed 7, case 0), four calls each against the check's float64 trajectory; after a wrong call,
which simple story the wrong values fit (buffers not zeroed, stale gradients, a step replayed
twice). Usage: python3 bench/probe_graph_variants.py [VARIANT]  (no argument: all, in children)"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

VARIANTS = (
    "solution",
    "solution-blocking",
    "solution-sync-copies",
    "side-then-sync",
    "warm-on-current",
    "no-warm",
    "side-zero-only",
    "side-no-zero-main-zero",
    "capture-on-side",
    "solution-twice",
)


def child(variant: str) -> None:
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
    want, wbuf = check.trajectory(a["p0"], a["grads"], a["lrs"], a["momentum"])
    shapes = [tuple(s) for s in a["shapes"]]
    m = float(a["momentum"])

    def fresh():
        p = check._split(torch.from_numpy(a["p0"]).cuda(), shapes)
        g = check._split(torch.from_numpy(a["g_make"]).cuda(), shapes)
        return p, g

    def make(p, g):
        if variant.startswith("solution"):
            s2 = importlib.util.spec_from_file_location("cg_sol", ex.folder / "solution.py")
            sol = importlib.util.module_from_spec(s2)
            s2.loader.exec_module(sol)
            return sol.make_step(p, g, m), None
        bufs = [torch.zeros_like(x) for x in p]
        lr = torch.zeros((), device="cuda")

        def update():
            for x, gg, b in zip(p, g, bufs, strict=True):
                b.mul_(m).add_(gg)
                x.addcmul_(b, lr, value=-1.0)

        side = torch.cuda.Stream()
        if variant in (
            "side-then-sync",
            "side-zero-only",
            "side-no-zero-main-zero",
            "capture-on-side",
        ):
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                if variant != "side-zero-only":
                    update()
                if variant != "side-no-zero-main-zero":
                    for b in bufs:
                        b.zero_()
            torch.cuda.current_stream().wait_stream(side)
            if variant == "side-no-zero-main-zero":
                for b in bufs:
                    b.zero_()
            if variant == "side-then-sync":
                torch.cuda.synchronize()
        elif variant == "warm-on-current":
            update()
            for b in bufs:
                b.zero_()
        graph = torch.cuda.CUDAGraph()
        kw = {"stream": side} if variant == "capture-on-side" else {}
        with torch.cuda.graph(graph, **kw):
            update()

        def step(v):
            lr.fill_(v)
            graph.replay()

        return step, bufs

    rounds = 2 if variant == "solution-twice" else 1
    hist = torch.from_numpy(a["grads"]).cuda()
    for r in range(rounds):
        p, g = fresh()
        step, bufs = make(p, g)
        line = []
        for k in range(4):
            for gg, new in zip(g, check._split(hist[k], shapes), strict=True):
                gg.copy_(new)
            if variant == "solution-sync-copies":
                torch.cuda.synchronize()
            step(float(a["lrs"][k]))
            torch.cuda.synchronize()
            got = check._flat(p)
            bad = ~np.isclose(got, want[k], rtol=1e-5, atol=1e-5)
            n = int(bad.sum())
            line.append(f"call {k + 1}: {n} wrong")
            if n and k == 0:
                p0 = a["p0"].astype(np.float64)
                g1 = a["grads"][0].astype(np.float64)
                gm = a["g_make"].astype(np.float64)
                lr0 = float(a["lrs"][0])
                stories = {
                    "buffers not zeroed": p0 - lr0 * (m * gm + g1),
                    "stale grads": p0 - lr0 * gm,
                    "replayed twice": p0 - lr0 * g1 - lr0 * (m * g1 + g1),
                    "not stepped": p0,
                }
                fit = {
                    s: int(np.isclose(got[bad], v[bad], rtol=1e-5, atol=1e-5).sum())
                    for s, v in stories.items()
                }
                at, per = 0, []
                for i, s in enumerate(shapes):
                    w = int(bad[at : at + int(np.prod(s))].sum())
                    if w:
                        per.append(i)
                    at += int(np.prod(s))
                line.append(f"fits {fit}; wrong tensors {per[:20]} ({len(per)})")
                if bufs is not None:
                    bb = check._flat(bufs)
                    line.append(
                        f"bufs wrong {int((~np.isclose(bb, wbuf[0], rtol=1e-5, atol=1e-5)).sum())}"
                    )
        print(f"{variant}[{r}]: " + "; ".join(line), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        child(sys.argv[1])
    else:
        for v in VARIANTS:
            env = dict(os.environ)
            if v == "solution-blocking":
                env["CUDA_LAUNCH_BLOCKING"] = "1"
            r = subprocess.run(
                [sys.executable, __file__, v], env=env, capture_output=True, text=True, timeout=120
            )
            print(
                r.stdout.strip() or f"{v}: rc {r.returncode} {r.stderr.strip()[-400:]}", flush=True
            )
