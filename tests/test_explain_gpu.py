"""`gpulab ex explain` against a real GPU (`-m gpu`; run with -s to read the tables).

- the pure occupancy calculator gives the driver's blocks per SM
  (cuOccupancyMaxActiveBlocksPerMultiprocessor) for a set of kernels, block sizes and dynamic
  shared memory, given CuPy's attributes of each kernel;
- the cubin NVRTC writes for this GPU's architecture has the shared and local memory of the
  kernel CuPy loads (registers are printed: CuPy's NVRTC and options may differ by a few);
- explain(gpu=True) finds the same top suspects as the static tier.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cupy_available
from test_explain import CATALOG, PLANTED, PLANTED_DIR, SLOW

from gpulab.core import nvrtc
from gpulab.experiments import kernel_device as device
from gpulab.explain import arch as arches
from gpulab.explain import cubin
from gpulab.explain import occupancy as occ
from gpulab.explain.explainer import explain_file
from gpulab.explain.source import scan

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cupy_available(), reason="needs CuPy on a GPU"),
]

BLOCKS = (32, 64, 96, 128, 160, 192, 256, 384, 512, 640, 768, 1024)
DYNAMIC = (0, 5000, 24 * 1024, 40 * 1024)


def _kernels() -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(label, code, name, options) of the planted kernels, the occupancy experiment's and the
    kernel track's references and slow variants."""
    from gpulab.experiments.occupancy import SOURCE

    out = [("occupancy.py", SOURCE, name, ()) for name in ("scale", "heavy")]
    files = [PLANTED_DIR / n for n in PLANTED] + sorted(CATALOG.glob("[23]*-*/solution.py"))
    files += [CATALOG / rel for rel in SLOW]
    for path in files:
        for ks in scan(path.read_text()).kernels:
            out.append((f"{path.parent.name}/{path.name}", ks.code, ks.name, ks.options))
    return out


def _arch() -> arches.Arch:
    info = device.probe()
    if info.arch not in arches.ARCHS:
        pytest.skip(f"{info.arch} is not one of the calculator's architectures")
    return arches.get(info.arch)


def test_calculator_matches_the_driver():
    a = _arch()
    rows, wrong = 0, []
    for label, code, name, opts in _kernels():
        attrs = device.attributes(code, name, opts)
        assert attrs is not None, f"{label}: {name} does not load"
        regs, smem = attrs["num_regs"], attrs["shared_size_bytes"]
        limit = attrs["max_threads_per_block"]
        for block in BLOCKS:
            if block > limit:
                continue
            for dyn in DYNAMIC:
                if smem + dyn > 48 * 1024:
                    continue
                got = device.occupancy(code, name, opts, block, dyn)
                assert got is not None, "this CuPy cannot ask the driver"
                mine = occ.compute(a, block, regs, smem, dyn, max_threads=limit)
                rows += 1
                if mine.blocks_per_sm != got:
                    wrong.append((label, name, block, dyn, regs, smem, mine.blocks_per_sm, got))
    print(f"\n{rows} (kernel, block, dynamic shared) cases on {a.name}; {len(wrong)} differ")
    for label, name, block, dyn, regs, smem, mine, got in wrong:
        print(
            f"  {label} {name} block {block} dyn {dyn} ({regs} regs, {smem} B smem):"
            f" calculator {mine}, driver {got}"
        )
    assert not wrong


def test_max_threads_per_block_matches_cupy():
    a = _arch()
    for label, code, name, opts in _kernels():
        attrs = device.attributes(code, name, opts)
        c = nvrtc.compile_source(code, a.name, opts)
        res = cubin.read(c.cubin)[name]
        mine = min(res.max_threads or 1024, occ.max_threads_for_regs(a, attrs["num_regs"]))
        assert mine == attrs["max_threads_per_block"], (label, name, attrs)


def test_nvrtc_resources_match_the_kernel_cupy_loads():
    a = _arch()
    print(f"\n{'kernel':48} {'regs ours/cupy':>15} {'smem':>7} {'local':>6}")
    for label, code, name, opts in _kernels():
        attrs = device.attributes(code, name, opts)
        res = cubin.read(nvrtc.compile_source(code, a.name, opts).cubin)[name]
        print(
            f"{label + ' ' + name:48} {res.registers:>7}/{attrs['num_regs']:<7}"
            f" {res.shared_static:>7} {res.local_bytes:>6}"
        )
        assert res.shared_static == attrs["shared_size_bytes"], (label, name)
        assert (res.local_bytes > 0) == (attrs["local_size_bytes"] > 0), (label, name)


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_gpu_mode_agrees_with_the_static_tier(name):
    static = explain_file(PLANTED_DIR / name)
    live = explain_file(PLANTED_DIR / name, gpu=True)
    (s,), (g,) = static.kernels, live.kernels
    assert (s.top.kind if s.top else None) == (g.top.kind if g.top else None)
    occupancy = next(f for f in g.findings if f.kind == "occupancy")
    assert occupancy.tag == "measured" and g.resources["source"] == "driver"
    assert "SMs" in live.device


@pytest.mark.parametrize("rel", sorted(SLOW))
def test_gpu_mode_slow_variants(rel):
    e = explain_file(Path(CATALOG / rel), exercise=SLOW[rel][0], gpu=True)
    (k,) = e.kernels
    assert k.top is not None and k.top.kind == SLOW[rel][1], "\n".join(e.card())


def test_the_warm_worker_answers_as_this_process_does(tmp_path, monkeypatch):
    """`gpulab ex explain --gpu` asks the driver in the learner's warm worker: the same figures
    as asking in this process."""
    from gpulab.explain.inputs import device_answers
    from gpulab.runner.warm.place import place
    from gpulab.runner.warm.remote import ask

    monkeypatch.setenv("GPULAB_WARM_WORKER", "1")
    monkeypatch.setenv("GPULAB_WARM_IDLE_S", "60")
    path = PLANTED_DIR / "tiny_blocks.py"
    try:
        answers = device_answers(path)
        assert answers is not None
        remote = explain_file(path, gpu=True, device=answers).to_dict()
    finally:
        ask(place(), "stop")
    local = explain_file(path, gpu=True).to_dict()
    for d in (remote, local):
        d.pop("seconds")
    assert remote == local
    assert remote["kernels"][0]["resources"]["source"] == "driver"
