"""Where cuda-graphs' check and a plain run of its reference part ways on a GPU: the reference's
make_step stepped once by hand against NumPy, then the check's own run() with its watch and its
counting each on and off. Prints one line a variant. Usage: python3 bench/probe_cuda_graphs.py"""

from __future__ import annotations

import contextlib
import importlib.util
from pathlib import Path

import numpy as np
import torch

from gpulab.exercises import api
from gpulab.exercises.loader import load_catalog

ex = load_catalog().get("cuda-graphs")
spec = importlib.util.spec_from_file_location("cg_check", ex.check_path)
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)
spec2 = importlib.util.spec_from_file_location("cg_sol", ex.folder / "solution.py")
sol = importlib.util.module_from_spec(spec2)
spec2.loader.exec_module(sol)


def ctx() -> api.Context:
    c = api.Context(rng=np.random.default_rng(7), seed=7, gpu=True, cupy=False, device="cuda:0")
    c.reference = lambda: sol.make_step
    return c


c = ctx()
case = check.cases(c)[0]
a = case.args
want = check.expected(case, c)
shapes = [tuple(s) for s in a["shapes"]]

# 1. by hand, no check machinery
p = check._split(torch.from_numpy(a["p0"]).cuda(), shapes)
g = check._split(torch.from_numpy(a["g_make"]).cuda(), shapes)
step = sol.make_step(p, g, float(a["momentum"]))
hist = torch.from_numpy(a["grads"]).cuda()
for k in range(3):
    for gg, new in zip(g, check._split(hist[k], shapes), strict=True):
        gg.copy_(new)
    step(float(a["lrs"][k]))
    torch.cuda.synchronize()
    got = check._flat(p)
    bad = int((~np.isclose(got, want[k], rtol=1e-5, atol=1e-5)).sum())
    print(
        f"by hand, call {k + 1}: {bad} of {got.size} wrong; got[0]={got[0]!r} want={want[k][0]!r}"
    )

# 2. the check's run() as the grader calls it, with pieces switched off
variants = {
    "as is": {},
    "no watch": {"_outside_the_graph": lambda: lambda: _Null()},
    "no counting": {"_Counting": lambda: _NullCount()},
}


class _Null(contextlib.AbstractContextManager):
    ops: list = []

    def __enter__(self):
        return self

    def __exit__(self, *e):
        return None


class _NullCount(_Null):
    captures = replays = 0

    def __enter__(self):
        self.replays = 0
        orig = torch.cuda.CUDAGraph.replay
        seen = self

        def replay(gr, *x, **k):
            seen.replays += 1
            return orig(gr, *x, **k)

        self._orig = orig
        torch.cuda.CUDAGraph.replay = replay
        return self

    def __exit__(self, *e):
        torch.cuda.CUDAGraph.replay = self._orig


for name, patch in variants.items():
    saved = {k: getattr(check, k) for k in patch}
    for k, v in patch.items():
        setattr(check, k, v)
    try:
        c = ctx()
        case = check.cases(c)[0]
        out = check.run(sol.make_step, case, c)
        bad = check.compare(check.expected(case, c), out, case, c)
        print(f"run() {name}: {'ok' if bad is None else bad.message[:160]}")
    except Exception as e:  # noqa: BLE001
        print(f"run() {name}: raised {type(e).__name__}: {str(e)[:160]}")
    finally:
        for k, v in saved.items():
            setattr(check, k, v)
print(torch.__version__, Path(torch.__file__).parent)

# 3. the grader's own path, in this process
from gpulab.exercises.run_check import run_check  # noqa: E402

for seed in (7, 2024):
    c = api.Context(
        rng=np.random.default_rng(seed),
        seed=seed,
        gpu=True,
        cupy=False,
        device="cuda:0",
        quick=True,
    )
    r = run_check(ex, ex.folder / "solution.py", seed, c)
    print(f"run_check seed {seed}: {r.verdict}: {r.message[:200]}")
