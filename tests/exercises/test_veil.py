"""The profiler looks off to the learner's code and on to torch's and ours (gpulab.exercises.veil)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gpulab.exercises import veil  # noqa: E402
from gpulab.exercises.sandbox import fresh_name, load_text  # noqa: E402

# What a learner who wants to tell a traced call from a timed one would write: every public
# predicate, reached by names built at run time so the reach scan does not see them
LEARNER = """
import inspect
import torch
import torch.autograd.profiler as P
from torch._C import _autograd as A

FLAG = "_is_" + "profiler_enabled"
ON = getattr(A, "_prof" + "iler_enabled")     # bound at import, before any trace
KIND = getattr(A, "_prof" + "iler_type")

def probes():
    return {
        "flag": bool(getattr(P, FLAG)),
        "flag_static": inspect.getattr_static(P, FLAG) is True,
        "flag_vars": bool(vars(P)[FLAG]),
        "enabled": bool(ON()),
        "enabled_now": bool(getattr(torch.autograd, "_prof" + "iler_enabled")()),
        "kind": str(KIND()),
    }
"""


def _learner(tmp_path: Path):
    path = tmp_path / "probe.py"
    path.write_text(LEARNER)
    return load_text(LEARNER, path, fresh_name("learner", "veil"))


def test_the_learner_sees_the_profiler_off_while_torch_and_we_see_it_on(tmp_path: Path) -> None:
    assert veil.install()
    module = _learner(tmp_path)
    from torch.profiler import ProfilerActivity, profile

    outside = module.probes()
    with profile(activities=[ProfilerActivity.CPU]):
        inside = module.probes()
        ours = (
            torch.autograd.profiler._is_profiler_enabled,
            torch._C._autograd._profiler_enabled(),
            str(torch._C._autograd._profiler_type()),
        )
    after = (torch.autograd.profiler._is_profiler_enabled, torch._C._autograd._profiler_enabled())
    assert inside == outside, "a traced call is told from an untimed one"
    assert not any(v for k, v in inside.items() if k != "kind")
    assert inside["kind"].endswith("NONE")
    # the truth is still served to everyone else (dynamo and Inductor read it)
    assert ours[0] is True and ours[1] is True and not ours[2].endswith("NONE")
    assert after == (False, False)
    assert inspect.getattr_static(torch.autograd.profiler, "_is_profiler_enabled") is not None


def test_install_is_once_and_torch_still_profiles(tmp_path: Path) -> None:
    assert veil.install() and veil.install()
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch.ones(8).add_(1)
    assert any("add" in e.name for e in prof.events())
