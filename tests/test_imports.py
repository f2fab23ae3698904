"""The layering rules of docs/architecture.md, checked in fresh interpreters."""

import subprocess
import sys

import pytest

HEADLESS = [
    "gpulab.core",
    "gpulab.core.params",
    "gpulab.core.results",
    "gpulab.core.timing",
    "gpulab.core.devices",
    "gpulab.experiments",
    "gpulab.experiments.registry",
    "gpulab.runner",
    "gpulab.telemetry",
    "gpulab.lessons",
    "gpulab.cli",
]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


@pytest.mark.parametrize("module", HEADLESS)
def test_headless_layers_never_import_textual(module):
    mods = _modules_after(f"import {module}")
    assert "textual" not in mods, f"{module} pulled in textual"


def test_registry_loads_without_torch_or_cupy():
    mods = _modules_after(
        "from gpulab.experiments.registry import all_experiments\nall_experiments()"
    )
    assert "torch" not in mods and "cupy" not in mods


def test_app_never_imports_torch_or_cupy():
    mods = _modules_after("import gpulab.app\nfrom gpulab.app import GpuLabApp")
    assert "textual" in mods
    assert "torch" not in mods, "the UI process imported torch"
    assert "cupy" not in mods, "the UI process imported cupy"


def test_no_textual_import_outside_app():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[1] / "gpulab"
    offenders = []
    for path in root.rglob("*.py"):
        if "app" in path.relative_to(root).parts[:1]:
            continue
        if re.search(r"^\s*(from|import)\s+textual\b", path.read_text(), re.M):
            offenders.append(str(path))
    assert not offenders
