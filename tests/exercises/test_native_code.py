"""Native code mapped during a check that allows a list of operations (refuse.NativeCode): a
shared object from outside the installed packages is named, one of an installed package is not.
The process's mappings are stood in for; the catalog's tree-reduction
wrong/compiled-by-inductor-at-import.py runs the real thing."""

from __future__ import annotations

import os
import site
import sys

from gpulab.exercises import refuse


def _mapped(monkeypatch, *sets: set[str]) -> None:
    answers = iter(sets)
    monkeypatch.setattr(refuse, "executable_mappings", lambda: next(answers))


def test_an_object_built_outside_the_installed_packages_is_named(monkeypatch, tmp_path):
    packages = site.getsitepackages()[0]
    _mapped(
        monkeypatch,
        {"/usr/lib/libc.so.6"},
        {"/usr/lib/libc.so.6", f"{packages}/numpy/_core/x.so"},
        {"/usr/lib/libc.so.6", f"{tmp_path}/torchinductor/c1.so (deleted)"},
    )
    native = refuse.NativeCode()
    assert native.loaded() is None
    said = native.loaded()
    assert said is not None and "outside the installed packages" in said and "c1.so" in said


def test_the_import_path_before_the_load_is_installed_and_later_additions_are_not(
    monkeypatch, tmp_path
):
    wheels, later = tmp_path / "site", tmp_path / "added"
    wheels.mkdir()
    later.mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(wheels)])
    _mapped(monkeypatch, set(), {f"{wheels}/yaml/_yaml.so"}, {f"{later}/k.so"})
    native = refuse.NativeCode()
    sys.path.append(str(later))  # the learner's file, trying to make its own folder trusted
    assert native.loaded() is None
    assert "k.so" in (native.loaded() or "")
    assert os.path.join(os.path.realpath(later), "") not in native.roots
