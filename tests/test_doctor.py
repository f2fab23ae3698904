"""`gpulab doctor`: every broken setup it knows, written down as facts (fake NVML, fake probe
results), each judged and given its fix; CPU mode exits 0; the real thing on this machine."""

from __future__ import annotations

import copy
import json

import pytest

from gpulab.cli import main
from gpulab.core.doc_tags import tag
from gpulab.doctor import checks as ck
from gpulab.doctor import gather, probe
from gpulab.testing.doctor import healthy
from gpulab.testing.fake_nvml import FakeNvml


def verdicts(facts: dict) -> dict[str, ck.Check]:
    return {c.id: c for c in ck.evaluate(facts)}


def test_a_healthy_gpu_box_is_all_ok():
    result = verdicts(healthy())
    assert {c.status for c in result.values()} == {ck.OK}, result
    assert "NVIDIA H100" in result["nvml"].message and "580.95.05" in result["nvml"].message


def test_a_healthy_cuda13_stack_is_all_ok():
    result = verdicts(healthy(runtime="13.0", cupy="cupy-cuda13x"))
    assert {c.status for c in result.values()} == {ck.OK}, result


@pytest.mark.parametrize("variant", ["no-library", "no-driver"])
def test_no_driver_is_cpu_mode_not_broken(variant):
    facts = healthy(variant)
    facts["probe"] = {"torch": {"installed": True, "version": "2.13.0+cpu", "cuda": ""}}
    facts["probe"]["cupy"] = {"dists": []}
    result = verdicts(facts)
    assert not ck.broken(list(result.values()))
    assert result["nvml"].status == ck.WARN and "CPU mode" in result["nvml"].message
    for gpu_only in ("driver", "cupy", "kernel-cupy", "kernel-torch", "pinned"):
        assert result[gpu_only].status == ck.SKIP, gpu_only
    reasons = ck.cpu_mode(facts)
    assert any("CPU-only build" in r for r in reasons) and "CuPy is not installed" in reasons
    if variant == "no-driver":
        assert "modprobe" in result["nvml"].fix


def test_a_lost_gpu_is_broken():
    result = verdicts(healthy("gpu-lost"))
    assert result["nvml"].status == ck.FAIL
    assert "fell off the bus" in result["nvml"].message and "reboot" in result["nvml"].fix


def test_a_missing_nvml_binding_is_broken(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pynvml(name, *args, **kwargs):
        if name == "pynvml":
            raise ImportError("No module named 'pynvml'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pynvml)
    facts = healthy()
    facts["nvml"] = gather.nvml_facts()
    check = verdicts(facts)["nvml"]
    assert check.status == ck.FAIL and check.fix == "pip install nvidia-ml-py"


@pytest.mark.parametrize("runs_anyway", [False, True])
def test_a_driver_older_than_torchs_cuda(runs_anyway):
    facts = healthy(runtime="13.0", cupy="cupy-cuda13x")
    nvml = FakeNvml("full")
    nvml.cuda = 12040
    facts["nvml"] = gather.nvml_facts(nvml)
    facts["probe"]["torch"]["available"] = runs_anyway
    check = verdicts(facts)["driver"]
    assert check.status == (ck.WARN if runs_anyway else ck.FAIL)
    assert "12.4" in check.message and "13.0" in check.message
    assert "update the NVIDIA driver" in check.fix and check.fix.endswith("/cu124")


def test_a_cpu_torch_on_a_gpu_box_is_broken_and_names_the_index():
    facts = healthy(runtime="13.0", cupy="cupy-cuda13x")
    facts["probe"]["torch"] = {"installed": True, "version": "2.13.0+cpu", "cuda": ""}
    result = verdicts(facts)
    assert result["torch"].status == ck.FAIL and "CPU-only" in result["torch"].message
    assert result["torch"].fix.endswith("download.pytorch.org/whl/cu130")
    assert result["driver"].status == ck.SKIP and result["kernel-torch"].status == ck.SKIP
    assert ck.cpu_mode(facts) == []  # a GPU is here: this is broken, not CPU mode


def test_torch_seeing_fewer_gpus_than_nvml():
    facts = healthy("two-gpus")
    facts["probe"]["torch"]["count"] = 1
    facts["env"] = {"CUDA_VISIBLE_DEVICES": "0"}
    check = verdicts(facts)["torch"]
    assert check.status == ck.WARN and "1 of NVML's 2" in check.message
    assert "CUDA_VISIBLE_DEVICES='0'" in check.message

    facts["env"] = {}  # no variable, no MIG: the container was not given the GPUs
    facts["probe"]["torch"].update(count=0, available=False)
    check = verdicts(facts)["torch"]
    assert check.status == ck.FAIL and "--gpus all" in check.fix


def test_cuda_visible_devices_hiding_everything_is_broken():
    facts = healthy()
    facts["probe"]["torch"].update(count=0, available=False)
    facts["env"] = {"CUDA_VISIBLE_DEVICES": ""}
    check = verdicts(facts)["torch"]
    assert check.status == ck.FAIL and check.fix == "unset CUDA_VISIBLE_DEVICES"


def test_mig_explains_the_count():
    facts = healthy("mig")
    assert facts["nvml"]["gpus"][0]["mig"]
    facts["probe"]["torch"]["count"] = 2
    result = verdicts(facts)
    assert "MIG on" in result["nvml"].message
    assert result["torch"].status == ck.WARN and "MIG instances" in result["torch"].message


def test_cupy_for_a_newer_cuda_than_the_driver_is_broken():
    facts = healthy(runtime="12.8", cupy="cupy-cuda13x")
    facts["probe"]["cupy"]["error"] = "cannot use CUDA (CUDARuntimeError: insufficient driver)"
    check = verdicts(facts)["cupy"]
    assert check.status == ck.FAIL and "needs a CUDA 13 driver" in check.message
    assert check.fix.startswith("pip uninstall -y cupy-cuda13x && pip install cupy-cuda12x")


def test_cupy_cuda12_on_a_cuda13_stack_says_which_package():
    facts = healthy(runtime="13.0", cupy="cupy-cuda12x")
    facts["probe"]["cupy"]["runtime"] = "12.9"
    check = verdicts(facts)["cupy"]
    assert check.status == ck.WARN and "torch uses CUDA 13" in check.message
    assert check.fix == "pip uninstall -y cupy-cuda12x && pip install cupy-cuda13x"


def test_cupy_that_fails_to_import_is_broken():
    facts = healthy()
    facts["probe"]["cupy"]["error"] = "failed to import (ImportError: libnvrtc.so.12)"
    check = verdicts(facts)["cupy"]
    assert check.status == ck.FAIL and "libnvrtc" in check.message
    assert "pip install cupy-cuda12x" in check.fix


def test_two_cupy_packages_are_broken():
    facts = healthy()
    facts["probe"]["cupy"]["dists"] = ["cupy-cuda12x", "cupy-cuda13x"]
    check = verdicts(facts)["cupy"]
    assert check.status == ck.FAIL
    assert check.fix == "pip uninstall -y cupy-cuda12x cupy-cuda13x && pip install cupy-cuda12x"


def test_no_cupy_on_a_gpu_box_is_a_warning_with_the_package():
    facts = healthy(runtime="13.0", cupy="cupy-cuda13x")
    facts["probe"]["cupy"] = {"dists": []}
    check = verdicts(facts)["cupy"]
    assert check.status == ck.WARN and check.fix == "pip install cupy-cuda13x"
    assert verdicts(facts)["kernel-cupy"].status == ck.SKIP


@pytest.mark.parametrize(
    ("where", "check_id"),
    [(("cupy", "kernel"), "kernel-cupy"), (("torch", "kernel"), "kernel-torch"),
     (("torch", "pinned"), "pinned")],
)  # fmt: skip
def test_a_failing_gpu_step_is_broken(where, check_id):
    facts = healthy()
    facts["probe"][where[0]][where[1]] = {"ok": False, "error": "CUDARuntimeError: boom"}
    result = verdicts(facts)
    assert result[check_id].status == ck.FAIL and "boom" in result[check_id].message
    assert ck.broken(list(result.values()))


def test_a_probe_that_crashed_fails_its_steps():
    facts = healthy()
    facts["probe"] = {"error": "killed by SIGSEGV (segmentation fault)"}
    result = verdicts(facts)
    for check_id in ("kernel-cupy", "kernel-torch", "pinned"):
        assert result[check_id].status == ck.FAIL and "SIGSEGV" in result[check_id].message


def test_the_worker_not_answering_or_slow():
    facts = healthy()
    facts["worker"] = {"ready": False, "error": "the worker did not answer within 180 s"}
    assert verdicts(facts)["worker"].status == ck.FAIL
    facts["worker"] = {"ready": True, "pid": 1, "ready_s": 45.0, "limit_s": 180.0}
    check = verdicts(facts)["worker"]
    assert check.status == ck.WARN and "45.0 s" in check.message


def test_unwritable_directories(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("GPULAB_DATA_DIR", str(blocker))
    monkeypatch.setenv("GPULAB_WORKDIR", str(blocker / "sub"))
    facts = {**healthy(), **gather.dirs_facts()}
    result = verdicts(facts)
    assert result["datadir"].status == ck.FAIL and "is a file" in result["datadir"].message
    assert "--data-dir" in result["datadir"].fix
    assert result["workspace"].status == ck.FAIL and "not writable" in result["workspace"].message
    assert "--workdir" in result["workspace"].fix


def test_writable_directories_are_ok(tmp_path, monkeypatch):
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("GPULAB_WORKDIR", raising=False)
    facts = gather.dirs_facts()
    assert facts["workspace"]["path"] == str(tmp_path / "data" / "exercises")
    result = verdicts({**healthy(), **facts})
    assert result["datadir"].status == ck.OK and result["workspace"].status == ck.OK


@pytest.mark.parametrize(
    ("terminal", "status", "words"),
    [
        ({"tty": True, "size": [80, 24], "colorterm": "truecolor"}, ck.OK, "80x24"),
        ({"tty": True, "size": [120, 40], "colorterm": ""}, ck.WARN, "COLORTERM=unset"),
        ({"tty": True, "size": [70, 20], "colorterm": "24bit"}, ck.WARN, "below 80x24"),
        ({"tty": True, "size": [100, 30], "no_color": True}, ck.WARN, "NO_COLOR"),
        ({"tty": False, "size": None, "colorterm": ""}, ck.SKIP, "not a terminal"),
    ],
)
def test_terminal(terminal, status, words):
    facts = healthy()
    facts["terminal"] = terminal
    check = verdicts(facts)["terminal"]
    assert check.status == status and words in check.message


def test_terminal_facts_read_the_environment(monkeypatch):
    monkeypatch.setenv("COLORTERM", "TrueColor")
    monkeypatch.setenv("NO_COLOR", "1")
    facts = gather.terminal_facts()
    assert facts["colorterm"] == "truecolor" and facts["no_color"]


def test_cupy_distribution_names(monkeypatch):
    class Dist:
        def __init__(self, name: str) -> None:
            self.metadata = {"Name": name}
            self.version = "13.6.0"

    dists = [Dist("numpy"), Dist("cupy-cuda13x"), Dist("CuPy-CUDA12x"), Dist("cupyx-extra")]
    monkeypatch.setattr(probe.metadata, "distributions", lambda: dists)
    assert probe.cupy_dists() == [("cupy-cuda12x", "13.6.0"), ("cupy-cuda13x", "13.6.0")]
    assert probe.dist_cuda("cupy-cuda12x") == "12" and probe.dist_cuda("cupy-cuda13x") == "13"
    assert probe.dist_cuda("cupy-cuda112") == "11.2" and probe.dist_cuda("cupy") == ""


def run_cli(capsys, monkeypatch, facts: dict, *flags: str) -> tuple[int, str]:
    monkeypatch.setattr(gather, "gather", lambda nvml=None: copy.deepcopy(facts))
    code = main(["doctor", *flags])
    return code, capsys.readouterr().out


def test_cli_exit_1_and_the_fix_when_broken(capsys, monkeypatch):
    facts = healthy()
    facts["probe"]["torch"] = {"installed": True, "version": "2.13.0+cpu", "cuda": ""}
    code, out = run_cli(capsys, monkeypatch, facts)
    assert code == 1
    line = next(s for s in out.splitlines() if "torch" in s and "CPU-only" in s)
    assert line.startswith(("✗", "X"))
    assert "fix: pip install --force-reinstall torch --index-url" in out
    assert "broken: torch" in out


def test_cli_json_when_healthy(capsys, monkeypatch):
    code, out = run_cli(capsys, monkeypatch, healthy(), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["schema"] == tag("doctor") and doc["ok"] and not doc["cpu_mode"]
    assert [c["id"] for c in doc["checks"]][:2] == ["nvml", "driver"]
    assert {c["status"] for c in doc["checks"]} == {"ok"}


def test_worker_limit_matches_the_lab():
    from gpulab.app.worker_link import READY_TIMEOUT_S

    assert gather.WORKER_LIMIT_S == READY_TIMEOUT_S


def test_cpu_mode_for_real(capsys):
    """This machine, unfaked: a real probe subprocess and a real worker. Without a GPU it is
    CPU mode with reasons and exit 0; with one, nothing is broken."""
    code = main(["doctor", "--json"])
    doc = json.loads(capsys.readouterr().out)
    checks = {c["id"]: c for c in doc["checks"]}
    assert checks["worker"]["status"] in (ck.OK, ck.WARN), checks["worker"]
    assert checks["datadir"]["status"] == ck.OK
    if doc["cpu_mode"]:
        assert code == 0 and doc["ok"] and doc["cpu_mode_reasons"]
        assert checks["nvml"]["message"].startswith("CPU mode")
    else:
        assert code == 0, [c for c in doc["checks"] if c["status"] == ck.FAIL]


@pytest.mark.gpu
def test_doctor_on_a_gpu_is_all_ok(capsys):
    code = main(["doctor", "--json"])
    doc = json.loads(capsys.readouterr().out)
    # The terminal is skipped when output is captured (as here) and judged in a real one.
    bad = [c for c in doc["checks"] if c["status"] != ck.OK and c["id"] != "terminal"]
    assert code == 0 and not doc["cpu_mode"] and not bad, bad


def test_the_doctor_process_never_imports_torch_or_cupy():
    """Only the probe subprocess and the worker import them (a broken CUDA install can crash
    at import: the doctor must live to say so)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom gpulab.doctor import cli, gather\n"
        "gather.nvml_facts(); gather.dirs_facts(); gather.terminal_facts()\n"
        "print(' '.join(m for m in ('torch', 'cupy', 'textual') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == []


def test_cupy_that_sees_no_gpu_is_broken():
    facts = healthy()
    facts["probe"]["cupy"].update(count=0)
    del facts["probe"]["cupy"]["kernel"]
    result = verdicts(facts)
    assert result["cupy"].status == ck.FAIL and "sees no GPU, NVML sees 1" in result["cupy"].message
    assert result["kernel-cupy"].status == ck.SKIP
    assert result["kernel-cupy"].message == "not run: see the CuPy line"


def test_the_probe_kernel_compiles_and_gives_2x_plus_1(monkeypatch):
    """The probe's CUDA C through NVRTC (where it is installed: CI has the wheel) and run on the
    CUDA emulator through the fake CuPy: the check the GPU path makes, on the CPU."""
    from gpulab.emulator import toolchain
    from gpulab.testing import fake_cupy, nvrtc

    if nvrtc.available():
        assert nvrtc.compile_errors(probe.KERNEL) is None
    if toolchain.compiler() is None:
        pytest.skip("no host C++ compiler for the CUDA emulator")
    cupy = fake_cupy.install(monkeypatch)

    class Compiling(cupy.RawKernel):
        compiled = 0

        def compile(self) -> None:  # real CuPy's RawKernel.compile: NVRTC, then load the module
            Compiling.compiled += 1

    monkeypatch.setattr(cupy, "RawKernel", Compiling)
    detail = probe._cupy_kernel(cupy)
    assert Compiling.compiled == 1 and "matches the host" in detail

    wrong = probe.KERNEL.replace("2.0f * x[i] + 1.0f", "2.0f * x[i]")
    monkeypatch.setattr(probe, "KERNEL", wrong)
    with pytest.raises(RuntimeError, match="disagrees"):
        probe._cupy_kernel(cupy)


@pytest.mark.parametrize(
    ("driver_cuda", "tag"),
    [("13.0", "/cu130"), ("12.9", "/cu129"), ("12.5", "/cu124"), ("12.0", "/cu118"),
     ("11.4", "update the NVIDIA driver"), ("", "update the NVIDIA driver")],
)  # fmt: skip
def test_torch_index_never_newer_than_the_driver(driver_cuda, tag):
    assert tag in ck.torch_index_hint(driver_cuda)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("import time; time.sleep(30)", "did not finish in 0.5 s"),
        ("import os, sys; sys.stderr.write('Fatal: CUDA init\\n'); os.abort()", "SIGABRT"),
        ("print('no marker here')", "exited with code 0 without its report"),
    ],
)
def test_a_probe_that_hangs_crashes_or_says_nothing(code, words):
    import asyncio
    import sys

    out = asyncio.run(gather.probe_facts(0.5, [sys.executable, "-c", code]))
    assert set(out) == {"error"} and words in out["error"], out
    facts = healthy()
    facts["probe"] = out
    assert verdicts(facts)["kernel-torch"].status == ck.FAIL


def test_a_worker_past_its_limit_is_broken():
    import asyncio

    out = asyncio.run(gather.worker_facts(0.01))
    assert not out["ready"] and "did not answer within 0.01 s" in out["error"]


def test_admin_only_counters_say_what_an_admin_changes():
    facts = healthy()
    facts["nvtools"]["admin_only"] = True
    check = verdicts(facts)["counters"]
    assert check.status == ck.WARN and "RmProfilingAdminOnly: 1" in check.message
    assert "NVreg_RestrictProfilingToAdminUsers=0" in check.fix
    facts["nvtools"]["root"] = True  # root reads them anyway
    assert verdicts(facts)["counters"].status == ck.OK


def test_missing_profilers_warn_with_the_fix_and_cpu_mode_skips_them():
    facts = healthy()
    facts["nvtools"].update(ncu=None, sanitizer=None)
    result = verdicts(facts)
    assert result["ncu"].status == ck.WARN and "GPULAB_NCU" in result["ncu"].fix
    assert result["sanitizer"].status == ck.WARN
    assert "nvidia-cuda-sanitizer-api" in result["sanitizer"].fix
    assert not ck.broken(list(result.values()))  # the static explain still works
    facts = healthy("no-driver")
    result = verdicts(facts)
    assert {result[k].status for k in ("counters", "ncu", "sanitizer")} == {ck.SKIP}


def test_the_counter_setting_is_read_from_the_driver_params(tmp_path):
    from gpulab.core.nvtools import counters_admin_only

    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 0\nOther: 1\n")
    assert counters_admin_only(params) is False
    params.write_text("RmProfilingAdminOnly: 1\n")
    assert counters_admin_only(params) is True
    assert counters_admin_only(tmp_path / "none") is None


def test_the_emulator_needs_a_cpp_compiler_and_says_so():
    facts = healthy()
    result = verdicts(facts)
    assert result["emulator"].status == ck.OK and "/usr/bin/g++" in result["emulator"].message
    facts["emulator"] = {"compiler": None, "missing": "no C++ compiler (g++ or clang++)",
                         "fix": "sudo apt install g++"}  # fmt: skip
    result = verdicts(facts)  # CuPy runs on this box: nothing lost without it
    assert result["emulator"].status == ck.SKIP and "not needed" in result["emulator"].message
    facts["nvml"] = {"loaded": False, "absent": True, "error": "no NVIDIA driver"}
    del facts["probe"]["cupy"]
    result = verdicts(facts)
    assert result["emulator"].status == ck.WARN and result["emulator"].fix == "sudo apt install g++"
    assert "no C++ compiler (g++ or clang++): the CUDA C exercises cannot run here" in (
        result["emulator"].message
    )
    assert not ck.broken(list(result.values()))
