"""cuda-graphs' reference solution stepped by hand on the check's data, against the check's
float64 trajectory; MODE picks what is changed. Usage: python3 bench/probe_graph_solution.py MODE
(plain, sync-copies, clone-hist, eager-first)"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import torch

from gpulab.exercises import api
from gpulab.exercises.loader import load_catalog

mode = sys.argv[1] if len(sys.argv) > 1 else "plain"
ex = load_catalog().get("cuda-graphs")
spec = importlib.util.spec_from_file_location("cg_check", ex.check_path)
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)
spec2 = importlib.util.spec_from_file_location("cg_sol", ex.folder / "solution.py")
sol = importlib.util.module_from_spec(spec2)
spec2.loader.exec_module(sol)
c = api.Context(rng=np.random.default_rng(7), seed=7, gpu=True, cupy=False, device="cuda:0")
case = check.cases(c)[0]
a = case.args
want = check.expected(case, c)
shapes = [tuple(s) for s in a["shapes"]]
p = check._split(torch.from_numpy(a["p0"]).cuda(), shapes)
g = check._split(torch.from_numpy(a["g_make"]).cuda(), shapes)
step = sol.make_step(p, g, float(a["momentum"]))
hist = torch.from_numpy(a["grads"]).cuda()
out = []
for k in range(4):
    rows = check._split(hist[k], shapes)
    for gg, new in zip(g, rows, strict=True):
        gg.copy_(new)
    if mode == "sync-copies":
        torch.cuda.synchronize()
    step(float(a["lrs"][k]))
    torch.cuda.synchronize()
    got = check._flat(p)
    gnow = check._flat(g)
    out.append(
        f"{int((~np.isclose(got, want[k], rtol=1e-5, atol=1e-5)).sum())} wrong, grads "
        f"{int((gnow != a['grads'][k].astype(np.float64)).sum())} differ"
    )
print(mode, "; ".join(out))
