"""The learner's warm worker for the CLI (gpulab.runner.warm): `gpulab ex check` from a shell
starts it once and says so, later checks reuse it, only its user can reach it, and it stops when
told or after its idle time. Every wait is on a condition, never a fixed sleep."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpulab.exercises.loader import find
from gpulab.runner.warm import place as pl
from gpulab.runner.warm.remote import ask, reachable

ROOT = Path(__file__).resolve().parents[1]


def _wait(what, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture
def shell(tmp_path, monkeypatch):
    """The environment of a learner's shell: warm worker on, data dir and workspace of its own,
    vector-add's reference as the learner's file; the warm worker stopped after the test."""
    monkeypatch.setenv("GPULAB_WARM_WORKER", "1")
    monkeypatch.setenv("GPULAB_WARM_IDLE_S", "120")
    monkeypatch.setenv("GPULAB_WORKDIR", str(tmp_path / "work"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    # PYTHONPATH is part of the warm worker's setting (its key): the same here as in the shell
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    env = dict(os.environ)
    ex = find("vector-add")
    (tmp_path / "work").mkdir()
    shutil.copyfile(ex.solution_path, tmp_path / "work" / ex.file_name)
    where = pl.place()
    yield env, where
    ask(where, "stop")
    _wait(lambda: not where.socket.exists())


def _gpulab(env, *argv):
    return subprocess.run(
        [sys.executable, "-m", "gpulab", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_a_check_starts_the_warm_worker_once_and_the_next_reuses_it(shell):
    env, where = shell
    first = _gpulab(env, "ex", "check", "vector-add", "--quick", "--json")
    assert first.returncode == 0, first.stderr
    assert "starting a warm worker" in first.stderr
    assert json.loads(first.stdout)["check"]["verdict"] == "pass"
    status = json.loads(_gpulab(env, "ex", "worker", "--json").stdout)
    assert status["running"] and status["status"]["jobs"] >= 1
    again = _gpulab(env, "ex", "check", "vector-add", "--quick", "--json")
    assert again.returncode == 0, again.stderr
    assert "starting a warm worker" not in again.stderr
    after = json.loads(_gpulab(env, "ex", "worker", "--json").stdout)["status"]
    assert after["pid"] == status["status"]["pid"]  # the same server
    assert after["workers"]["0"]["pid"] == status["status"]["workers"]["0"]["pid"]
    assert after["jobs"] == status["status"]["jobs"] + 1
    # only this user: the folder 0700, the socket 0600
    assert stat.S_IMODE(where.folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(where.socket.stat().st_mode) == 0o600
    # and the attempt went into the learner's progress, as before
    listed = json.loads(_gpulab(env, "ex", "list", "--json").stdout)["exercises"]
    assert next(r for r in listed if r["id"] == "vector-add")["attempts"] == 2
    stopped = _gpulab(env, "ex", "worker", "--stop")
    assert "stopping" in stopped.stdout
    _wait(lambda: not reachable(where) and not where.socket.exists())


def test_an_idle_warm_worker_stops_by_itself(tmp_path, monkeypatch):
    monkeypatch.setenv("GPULAB_WARM_WORKER", "1")
    monkeypatch.setenv("GPULAB_WARM_IDLE_S", "1")
    monkeypatch.setenv("GPULAB_NO_STANDBY", "1")
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    from gpulab.runner.warm.remote import start

    where = pl.place()
    assert start(where)
    _wait(lambda: not reachable(where) and not where.socket.exists(), timeout=120)


def test_the_socket_folder_is_private(tmp_path):
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o755)
    os.chmod(open_dir, 0o755)
    pl.private_dir(open_dir)
    assert stat.S_IMODE(open_dir.stat().st_mode) == 0o700
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(pl.NotPrivate, match="not a folder"):
        pl.private_dir(tmp_path / "link")


def test_each_setting_has_its_own_worker(monkeypatch, tmp_path):
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path / "a"))
    a = pl.place()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    b = pl.place()
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path / "b"))
    c = pl.place()
    assert len({a.key, b.key, c.key}) == 3
    assert len(os.fsencode(str(c.socket))) <= 100


def test_off_means_a_worker_of_its_own(monkeypatch):
    from gpulab.runner.warm.remote import warm_client

    monkeypatch.setenv("GPULAB_WARM_WORKER", "0")
    said = []
    assert warm_client(say=said.append) is None and not said
