"""compile-fused on a GPU: how fast the compiled chain runs on the check's large input (32M
elements) depending on the order the sizes come in, each order in a fresh process with
Inductor's caches off. A: 1, 33, then 32M (the check's order up to 2026-11-30: the graph that
runs on 32M is the dynamic one compiled at n=33); B: 1, 32M, then 33 (the dynamic graph compiled
at 32M); C: 32M only (a static graph). Usage: python3 bench/probe_compile_fused_order.py"""

import importlib.util
import os
import subprocess
import sys
import time

CAT = "gpulab/exercises/catalog/15-compile-fused"
BIG = 1 << 25
ORDERS = {"A": [1, 33, BIG], "B": [1, BIG, 33], "C": [BIG]}


def child(order: str, path: str) -> None:
    import torch
    from torch._dynamo.utils import counters

    spec = importlib.util.spec_from_file_location("mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for n in ORDERS[order]:
        mod.run(torch.rand(n, device="cuda") + 0.1, torch.rand(n, device="cuda") + 0.5)
    x = torch.rand(BIG, device="cuda") * 6 - 3
    w = torch.rand(BIG, device="cuda") * 1.5 + 0.5

    def med(f):
        for _ in range(5):
            f(x, w)
        torch.cuda.synchronize()
        each = []
        for _ in range(50):
            t = time.perf_counter()
            f(x, w)
            torch.cuda.synchronize()
            each.append(time.perf_counter() - t)
        return sorted(each)[25] * 1e3

    def eager(x, w):
        y = x * w + 0.5
        y = y / (y[:1].abs() + 1.0)
        return torch.tanh(y) * torch.sigmoid(y) + y * y

    graphs = int(counters["stats"]["unique_graphs"])
    print(
        f"{order} {os.path.basename(path):26s} graphs {graphs}  compiled {med(mod.run):.3f} ms"
        f"  eager {med(eager):.3f} ms",
        flush=True,
    )


def main() -> None:
    if len(sys.argv) == 3:
        child(sys.argv[1], sys.argv[2])
        return
    env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
    for path in (f"{CAT}/solution.py", f"{CAT}/right/select-scale.py"):
        for order in ORDERS:
            subprocess.run(
                [sys.executable, __file__, order, path], env=env, timeout=120, check=False
            )


if __name__ == "__main__":
    main()
