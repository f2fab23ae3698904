# expect: started a thread when it was loaded
# family: escape
"""Shortcut (a red team's, 2026-11-30): no tree. At import, a one-rank gloo process group (made
directly, so no default group is set) runs an all-reduce whose Future callback never returns:
it loops on gloo's own thread, started in C (no Thread object, no audit event, out of the
check's per-thread torch modes), serving torch.sum to each call (gold, 7.1x, before the rule)."""

import threading
import time

import torch
import torch.distributed as dist

_job = {"x": None, "out": None, "until": time.monotonic() + 20.0}
_main = threading.get_ident()
_serving: list = []


def _serve(fut):
    if threading.get_ident() == _main or _serving:
        return 0
    _serving.append(threading.get_ident())
    while time.monotonic() < _job["until"]:
        t = _job["x"]
        if t is None:
            time.sleep(0.0005)
            continue
        _job["out"], _job["x"] = torch.sum(t), None
    return 0


_group = dist.ProcessGroupGloo(dist.HashStore(), 0, 1)
for _ in range(50):
    _group.allreduce([torch.zeros(1)]).get_future().then(_serve)
    time.sleep(0.01)
    if _serving:
        break


def tree_sum(x):
    _job["out"], _job["x"] = None, x
    while _job["out"] is None:
        time.sleep(0)
    return _job["out"]
