"""Two torchrun launchers on loopback (two one-process "nodes", gloo) run allreduce together:
the rendezvous docs/multi-gpu.md describes for several machines."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch.distributed.run")
REPO = Path(__file__).resolve().parents[1]


def test_two_local_nodes_rendezvous_and_reduce_exactly():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2"]
    argv += ["--nproc-per-node", "1", "--rdzv-backend", "c10d"]
    argv += ["--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "gpulab-test"]
    argv += ["-m", "gpulab.runner.multi.torchrun", "allreduce", "max_bytes=64"]
    nodes = [
        subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = []
    try:
        for p in nodes:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err[-2000:]
            outs.append(out)
    finally:
        for p in nodes:
            if p.poll() is None:
                p.kill()
                p.wait()
    printed = [o for o in outs if o.strip()]
    assert len(printed) == 1  # rank 0 prints, on whichever node it landed
    lines = [json.loads(line) for line in printed[0].splitlines() if line.startswith("{")]
    summary = lines[-1]["summary"]
    assert summary["ranks"] == 2 and summary["backend"] == "gloo" and summary["exact"]
    assert {row["op"] for row in lines[:-1]} == {"all-reduce", "all-gather", "reduce-scatter"}
