"""The source scan that refuses code reaching for the grader (gpulab.exercises.reach)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.exercises.loader import load_catalog
from gpulab.exercises.reach import reaches_for_the_grader


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("import torch\nn = torch._C._len_torch_function_stack()\n", "_len_torch_function_stack"),
        (
            "from torch.utils._python_dispatch import _disable_current_modes\n",
            "_disable_current_modes",
        ),
        ("import torch\nwith torch._C.DisableTorchFunction():\n    pass\n", "DisableTorchFunction"),
        (
            "import torch\non = torch.autograd.profiler._is_profiler_enabled\n",
            "_is_profiler_enabled",
        ),
        ("import sys\nf = sys._getframe(1).f_locals\n", "_getframe"),
        ("import inspect\nf = inspect.currentframe().f_back\n", "currentframe"),
        ("import gc\nobjs = gc.get_objects()\n", "get_objects"),
        ("from torch._dynamo.utils import counters\n", "counters"),
        ("import torch._dynamo.utils\ntorch._dynamo.utils.counters.clear()\n", "counters"),
        # the emulator's record of what ran (zip-add's wrong/trace-emptied-after-the-library.py)
        ("import gpulab.emulator.cupy_module as m\n", "gpulab.emulator.cupy_module"),
        ("from gpulab import emulator\n", "gpulab.emulator"),
        (
            "import importlib\nm = importlib.import_module('gpulab.emulator.cupy_module')\n",
            "emulator",
        ),
        ("import cupy\ng = cupy.empty.__globals__\n", "__globals__"),
        ("import sys, cupy\nt = sys.modules[cupy.empty.__module__]._TRACE\n", "_TRACE"),
        ("import cupy\nt = cupy.__gpulab_trace__\n", "__gpulab_trace__"),
    ],
)
def test_each_way_of_reaching_for_the_grader_is_named_with_its_line(source, named):
    why = reaches_for_the_grader(source)
    assert why is not None and named in why and why.startswith("line ")
    assert "\n" not in why


def test_the_first_line_is_named_when_there_are_several():
    source = (
        "import sys\n\n\ndef f():\n    return sys._getframe(1)\n\nimport gc\ngc.get_objects()\n"
    )
    assert reaches_for_the_grader(source).startswith("line 5:")


@pytest.mark.parametrize(
    "source",
    [
        "# sys._getframe would read the grader's frames; we do not\nx = 1\n",
        "doc = 'no _len_torch_function_stack here, only a string'\n",
        "import torch\ncounters = {'calls': 0}\ntorch._dynamo.mark_dynamic\n",
        "import torch\nexplained = torch._dynamo.explain\n",
        "def broken(:\n",  # left to the load, which says where the syntax error is
    ],
)
def test_comments_strings_our_own_names_and_broken_files_are_not_matched(source):
    assert reaches_for_the_grader(source) is None


def test_dlpack_exits_count_only_where_a_check_refuses_library_calls():
    source = "from torch.utils.dlpack import to_dlpack\n"
    assert reaches_for_the_grader(source) is None  # CuPy interop elsewhere is fair
    assert "DLPack" in reaches_for_the_grader(source, refusing=True)


def test_no_solution_starter_or_right_variant_in_the_catalog_is_refused():
    for ex in load_catalog():
        refusing = "REFUSE" in ex.check_path.read_text(encoding="utf-8")
        files = [ex.solution_path, ex.starter_path, *sorted((ex.folder / "right").glob("*.py"))]
        files += sorted(ex.folder.glob("expert*.py"))
        for path in files:
            why = reaches_for_the_grader(Path(path).read_text(encoding="utf-8"), refusing=refusing)
            assert why is None, f"{path}: {why}"


@pytest.mark.parametrize(
    "source",
    [
        "import ctypes\n",
        "import ctypes.util as u\n",
        "from ctypes import cast, memmove\n",
        "from ctypes.util import find_library\n",
    ],
)
def test_ctypes_is_named_however_it_is_imported(source):
    said = reaches_for_the_grader(source)
    assert said is not None and "your code uses ctypes" in said and said.startswith("line 1:")


def test_a_cast_from_typing_is_not_ctypes():
    assert reaches_for_the_grader("from typing import cast\nx = cast(int, 3)\n") is None


@pytest.mark.parametrize(
    "source",
    [
        "import inspect\nframes = inspect.stack(0)\n",
        "from inspect import stack\n",
        "import inspect\nv = inspect.getargvalues(f)\n",
    ],
)
def test_the_frame_walkers_of_inspect_are_named(source):
    said = reaches_for_the_grader(source)
    assert said is not None and "reads the callers' frames" in said


def test_torch_stack_is_not_a_frame_walker():
    assert reaches_for_the_grader("import torch\nx = torch.stack([a, b])\n") is None


def test_a_variable_of_the_learners_named_like_the_emulators_record_is_not_matched():
    assert reaches_for_the_grader("_TRACE = []\n_TRACE.append(1)\n") is None
