"""Host-to-device copies from pageable memory, two correct ways, at the bandwidth exercise's sizes.

    python bench/probe_pageable.py [--out FILE]

The bandwidth exercise accepts a learner's pageable figure within bounds of its own measurement;
a correct solution that copies with `.to("cuda")` into a new tensor each time read 0.34x the
check's `copy_` into a kept buffer on an H200. This measures both, with and without
non_blocking, at 64 and 256 MiB, median of 7, to say which is the odd one out and by how much.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch


def gbs(fn, nbytes, repeats=7):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return nbytes / statistics.median(times) / 1e9


def _size(nbytes: int) -> dict[str, float]:
    src = torch.ones(nbytes // 4)
    pinned = torch.empty(nbytes // 4, pin_memory=True)
    pinned.copy_(src)
    dst = torch.empty(nbytes // 4, device="cuda")
    return {
        "pageable copy_ into kept, non_blocking": gbs(
            lambda: dst.copy_(src, non_blocking=True), nbytes
        ),
        "pageable copy_ into kept, blocking": gbs(lambda: dst.copy_(src), nbytes),
        "pageable .to() new, non_blocking": gbs(lambda: src.to("cuda", non_blocking=True), nbytes),
        "pageable .to() new, blocking": gbs(lambda: src.to("cuda"), nbytes),
        "pinned copy_ into kept": gbs(lambda: dst.copy_(pinned, non_blocking=True), nbytes),
        "pinned .to() new": gbs(lambda: pinned.to("cuda", non_blocking=True), nbytes),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    args = p.parse_args()
    rows = {f"{mib} MiB": _size(mib << 20) for mib in (64, 256)}
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "gbs": rows}
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
