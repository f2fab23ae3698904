"""The fault matrix: each fault a learner's machine can throw at gpulab, and what must hold after
it: the lab goes on (no traceback, a notice or one line instead) and nothing saved is lost.

Faults of the runner are tested where its shared worker lives (starting workers is what costs):
    exception in an experiment    test_runner.py::test_exception_is_reported_and_the_worker_keeps_serving
    OOM (simulated, CPU)          test_runner.py::test_oom_through_the_cap_then_memory_back_and_next_job,
                                  and the classifier below (MemoryError, torch's CPU wording)
    worker SIGSEGV / SIGABRT      test_runner.py::test_crash_is_reported_and_a_new_worker_runs_the_next_job
    SIGKILL near a memory limit   test_runner.py::test_a_sigkill_after_an_oom_kill_says_probably_out_of_memory
    hang ignoring cancel          test_runner.py::test_hang_ignoring_cancel_is_killed_and_the_runner_ready_again_within_3_s
    parent SIGKILL, SIGHUP        test_runner_parent.py::test_worker_and_spare_exit_within_2_s_when_their_parent_is_killed
    lost terminal (the TUI)       test_app_terminal.py::test_sighup_ends_gpulab_and_its_workers_within_a_second,
                                  test_app_terminal.py::test_a_terminal_that_stalls_then_closes_mid_run
Here: a damaged progress file (truncated, random bytes, one bad page under an intact header), a
read-only and a full data dir, a data dir that is a file, two instances on one data dir, and the
memory cgroup reader on fake /proc and /sys trees.

Permissions do not bind root, so where a test needs an unwritable directory it uses chmod when
not root and, as root, makes the same call fail the way the OS would (PermissionError, SQLite's
"attempt to write a readonly database"); what follows the failure is real either way.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import gpulab.store.connection as store_db
from gpulab import cli
from gpulab.core import events as ev
from gpulab.core import hostmem
from gpulab.core.failures import classify
from gpulab.store.connection import StoreError
from gpulab.store.database import Store
from gpulab.store.recover import check, recover

REPO = Path(__file__).resolve().parents[1]
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False
PAGE = 4096
LESSONS, RUNS = 120, 120


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fill(path: Path) -> None:
    """A progress file of a few dozen pages: lessons read, a quiz, runs with their params."""
    with Store(path) as s:
        s._db.execute("PRAGMA synchronous=OFF")  # a fixture: no fsync per row
        for i in range(LESSONS):
            s.mark_read(f"lesson-{i:04d}-{'x' * 40}")
        s.record_quiz("why-gpus", 2, 3)
        for i in range(RUNS):
            s.add_run("bandwidth", {"i": i, "pad": "y" * 100}, final_type="result")


def _root_pages(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT name, rootpage FROM sqlite_master WHERE type='table'"))


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    rng = random.Random(12)
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2 + 100])  # a copy killed halfway
    elif how == "random":
        path.write_bytes(bytes(rng.getrandbits(8) for _ in range(len(data))))
    elif how == "bad-page":  # the runs table's root page, the header (page 1) intact
        page = _root_pages(path)["runs"]
        data[(page - 1) * PAGE : page * PAGE] = bytes(rng.getrandbits(8) for _ in range(PAGE))
        path.write_bytes(data)
    else:
        raise ValueError(how)


def _one_line(text: str) -> None:
    assert text and "\n" not in text and "Traceback" not in text


# ------------------------------------------------------------------------ damaged progress


@pytest.mark.parametrize("how", ["truncated", "random", "bad-page"])
def test_a_damaged_file_degrades_to_notices_and_is_never_changed(tmp_path, how):
    path = tmp_path / "gpulab.sqlite3"
    _fill(path)
    _damage(path, how)
    before = _digest(path)
    seen: list[str] = []
    try:
        s = Store(path, on_notice=seen.append)
    except StoreError as exc:  # the schema cannot be loaded: one line naming the file
        assert how in ("random", "truncated")
        _one_line(str(exc))
        assert str(path) in str(exc) and "recover" in str(exc)
    else:
        with s:
            # Every read and write returns; what can be read is read.
            marks, best, runs = s.read_marks(), s.best_scores(), s.list_runs(limit=1000)
            s.is_read("lesson-0000"), s.answers("why-gpus")
            s.mark_read("new-lesson")
            s.record_answer("why-gpus", 0, 1, True)
            assert s.record_quiz("why-gpus", 3, 3).best_score == 3  # this try, not saved
            assert s.add_run("matmul", {}) == 0
            s.finish_run(1, "result")
        if how == "bad-page":
            assert len(marks) == LESSONS and best["why-gpus"].best_score == 2  # intact tables
            assert runs == []
        assert seen and seen == s.notices
        for note in seen:
            _one_line(note)
        assert any(f"your file is kept at {path}" in n for n in seen)
        assert any("progress could not be read" in n for n in seen)
        assert s.damaged
    assert _digest(path) == before  # nothing written into the damaged file


def test_recover_keeps_the_damaged_file_and_salvages_every_readable_row(tmp_path):
    path = tmp_path / "gpulab.sqlite3"
    _fill(path)
    # Damage a leaf in the middle of the runs table: rows before and after it come back.
    with sqlite3.connect(path) as db:
        pages = [r[0] for r in db.execute("SELECT pageno FROM dbstat WHERE name='runs'")]
    leaves = sorted(pages)[1:-1]
    if not leaves:  # no dbstat in this SQLite build: fall back to the table's root page
        leaves = [_root_pages(path)["runs"]]
    page = leaves[len(leaves) // 2]
    data = bytearray(path.read_bytes())
    data[(page - 1) * PAGE : page * PAGE] = b"\xff" * PAGE
    path.write_bytes(data)
    original = path.read_bytes()
    assert check(path)
    report = recover(path)
    assert report.kept_at.read_bytes() == original
    assert check(path) == []
    with Store(path) as s:
        assert len(s.read_marks()) == LESSONS
        assert s.best_scores()["why-gpus"].best_score == 2
        runs = s.list_runs(limit=1000)
        assert 0 < len(runs) < RUNS and report.rows["runs"] == len(runs)
        assert {r.id for r in runs} < set(range(1, RUNS + 1))  # ids (and order) kept
        s.mark_read("after")  # the recovered file takes writes again
        assert s.is_read("after") and not s.notices


def test_recover_reads_the_leaves_under_a_bad_root_page(tmp_path):
    """A table's root (an interior page) gone: SQL reads none of its rows; the pages hold them
    all, a row longer than a page (overflow pages) included."""
    path = tmp_path / "gpulab.sqlite3"
    _fill(path)
    with Store(path) as s:
        big = s.add_run("blur", {"image": "x"}, summary={"log": "z" * 3 * PAGE})
    _damage(path, "bad-page")  # the runs table's root
    with Store(path) as s:
        assert s.list_runs() == []
    report = recover(path)
    assert report.rows["runs"] == RUNS + 1 and "runs" in report.unreadable
    with Store(path) as s:
        runs = {r.id: r for r in s.list_runs(limit=1000)}
        assert sorted(runs) == list(range(1, RUNS + 2))
        assert all(runs[i + 1].params == {"i": i, "pad": "y" * 100} for i in range(RUNS))
        assert runs[big].summary == {"log": "z" * 3 * PAGE}
        assert len(s.read_marks()) == LESSONS
        assert s.pragma("integrity_check") == "ok"


def test_recover_never_raises_and_never_invents_a_row(tmp_path):
    """Seeded random damage, whole pages and scattered bytes: whatever comes back was there
    (a flipped byte inside a value can survive, as it would through SQL: it is not invented)."""
    base = tmp_path / "base.sqlite3"
    _fill(base)
    with sqlite3.connect(base) as db:
        ids = {r[0] for r in db.execute("SELECT id FROM runs")}
        lessons = {r[0] for r in db.execute("SELECT lesson_id FROM lessons_read")}
    pages = base.stat().st_size // PAGE
    for seed in range(12):
        rng = random.Random(seed)
        path = tmp_path / f"s{seed}" / "gpulab.sqlite3"
        path.parent.mkdir()
        data = bytearray(base.read_bytes())
        for _ in range(rng.choice([1, 2, 3])):
            page = rng.randrange(2, pages + 1)
            if rng.random() < 0.5:
                data[(page - 1) * PAGE : page * PAGE] = rng.randbytes(PAGE)
            else:
                for _ in range(20):
                    data[(page - 1) * PAGE + rng.randrange(PAGE)] = rng.getrandbits(8)
        path.write_bytes(bytes(data))
        recover(path)
        with Store(path) as s:
            assert {r.id for r in s.list_runs(limit=1000)} <= ids
            assert len(set(s.read_marks()) - lessons) <= 1  # a flipped byte in one key at most
            assert s.pragma("integrity_check") == "ok"


def test_store_check_and_recover_commands(tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    monkeypatch.setenv("GPULAB_DATA_DIR", str(data))
    assert cli.main(["store"]) == 0
    assert "no progress saved yet" in capsys.readouterr().out
    data.mkdir()
    _fill(data / "gpulab.sqlite3")
    assert cli.main(["store", "check"]) == 0
    _damage(data / "gpulab.sqlite3", "bad-page")
    assert cli.main(["store", "check"]) == 1
    assert "gpulab store recover" in capsys.readouterr().out
    assert cli.main(["store", "recover"]) == 0
    out = capsys.readouterr().out
    assert "lessons_read 120" in out and "damaged file is kept at" in out
    assert cli.main(["store"]) == 0
    # One kept copy; its -wal and -shm beside it when the damaged file still had them (an
    # earlier connection's, closed when the collector got to it: CI's loaded run kept both)
    kept = [
        p for p in data.glob("gpulab.sqlite3.damaged-*") if not p.name.endswith(("-wal", "-shm"))
    ]
    assert len(kept) == 1
    sides = {p.name for p in data.glob("gpulab.sqlite3.damaged-*")} - {kept[0].name}
    assert sides <= {kept[0].name + "-wal", kept[0].name + "-shm"}


def test_recover_refuses_a_file_another_gpulab_is_writing(tmp_path):
    path = tmp_path / "gpulab.sqlite3"
    _fill(path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="in use by another gpulab"):
            recover(path)
    finally:
        other.execute("ROLLBACK")
        other.close()


@pytest.mark.parametrize("how", ["truncated", "bad-page"])
def test_gpulab_lessons_lists_lessons_and_says_why_progress_is_missing(
    tmp_path, monkeypatch, capsys, how
):
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("GPULAB_DATA_DIR", str(data))
    with Store(data / "gpulab.sqlite3") as s:
        for _ in range(300):  # enough pages that half the file loses the lessons table's rows
            s.add_run("bandwidth", {"pad": "y" * 200})
        s.mark_read("why-gpus")
    if how == "bad-page":
        page = _root_pages(data / "gpulab.sqlite3")["lessons_read"]
        raw = bytearray((data / "gpulab.sqlite3").read_bytes())
        raw[(page - 1) * PAGE : page * PAGE] = b"\x00\x13" * (PAGE // 2)
        (data / "gpulab.sqlite3").write_bytes(raw)
    else:
        _damage(data / "gpulab.sqlite3", how)
    assert cli.main(["lessons"]) == 0
    captured = capsys.readouterr()
    assert "lessons read" in captured.out  # the list still printed
    errors = captured.err.strip().splitlines()
    assert errors and all(line.startswith("gpulab: ") for line in errors)
    assert any("kept at" in line for line in errors), errors
    assert "Traceback" not in captured.err


async def test_the_tui_shows_a_notice_for_a_damaged_file_and_goes_on(tmp_path):
    from test_app_lessons import LessonsApp, _open, _pane

    path = tmp_path / "gpulab.sqlite3"
    with Store(path) as s:
        s.mark_read("first-steps")
        s.record_quiz("first-steps", 1, 2)
    page = _root_pages(path)["quiz_best"]
    raw = bytearray(path.read_bytes())
    raw[(page - 1) * PAGE : page * PAGE] = b"\xee" * PAGE
    path.write_bytes(raw)
    before = _digest(path)
    app = LessonsApp(tmp_path)  # the pane reads the store at mount and again per lesson
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _open(pilot, "first-steps")
        await pilot.pause()
        assert pane.current == "first-steps"
        messages = [n.message for n in app._notifications]
        assert any("progress could not be read" in m and str(path) in m for m in messages)
        assert _pane(app).store.is_read("first-steps")  # the readable table still reads
    assert _digest(path) == before


# ------------------------------------------------------------------------ read-only data dir


@contextmanager
def _read_only(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`folder` and its files unwritable: chmod, or as root the refusal SQLite would give."""
    if not ROOT:
        modes = {p: p.stat().st_mode for p in [folder, *folder.iterdir()]}
        for p in modes:
            p.chmod(stat.S_IRUSR | stat.S_IXUSR | (stat.S_IRUSR if p.is_file() else 0))
        try:
            yield
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return

    def refuse(self: Store, target: str) -> None:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(Store, "_open_rw", refuse)
    yield
    monkeypatch.undo()


def test_a_read_only_data_dir_shows_progress_and_saves_nothing(tmp_path, monkeypatch):
    path = tmp_path / "gpulab.sqlite3"
    with Store(path) as s:
        s.mark_read("why-gpus")
        s.record_quiz("why-gpus", 3, 3)
    before = _digest(path)
    with _read_only(tmp_path, monkeypatch), Store(path) as s:
        assert s.read_only
        assert list(s.read_marks()) == ["why-gpus"]
        assert s.best_scores()["why-gpus"].best_score == 3
        s.mark_read("transfers")
        assert not s.is_read("transfers")
        assert any("nothing new will be saved" in n for n in s.notices)
        for note in s.notices:
            _one_line(note)
    assert _digest(path) == before


def test_read_only_with_an_unmerged_wal_still_shows_its_commits(tmp_path, monkeypatch):
    """A WAL left by a killed gpulab, no -shm, and a directory it cannot be created in: the
    commits in the WAL are read from a private copy."""
    src = tmp_path / "src" / "gpulab.sqlite3"
    s = Store(src)
    s._db.execute("PRAGMA wal_autocheckpoint=0")  # keep the commit in the WAL
    s.mark_read("in-the-wal")
    dest = tmp_path / "ro" / "gpulab.sqlite3"
    dest.parent.mkdir()
    dest.write_bytes(src.read_bytes())
    Path(f"{dest}-wal").write_bytes(Path(f"{src}-wal").read_bytes())
    s.close()
    if ROOT:  # mode=ro would create the -shm as root: refuse it as a read-only dir would
        real = sqlite3.connect

        def connect(target: str, *a: Any, **k: Any) -> sqlite3.Connection:
            if "mode=ro" in str(target):
                raise sqlite3.OperationalError("unable to open database file")
            return real(target, *a, **k)

        monkeypatch.setattr(store_db.sqlite3, "connect", connect)
    with _read_only(dest.parent, monkeypatch), Store(dest, read_only=True) as ro:
        assert ro.is_read("in-the-wal")


def test_gpulab_lessons_in_a_read_only_data_dir(tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    monkeypatch.setenv("GPULAB_DATA_DIR", str(data))
    with Store() as s:
        s.mark_read("why-gpus")
    with _read_only(data, monkeypatch):
        assert cli.main(["lessons", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["read"] == 1
    assert any("nothing new will be saved" in p for p in out["problems"])


# ------------------------------------------------------------------------ full disk, locks


def test_a_full_disk_drops_the_write_says_so_and_the_next_one_works(tmp_path):
    """SQLITE_FULL for real: max_page_count caps the file where it stands."""
    path = tmp_path / "gpulab.sqlite3"
    with Store(path) as s:
        s.mark_read("kept")
        pages = s.pragma("page_count")
        s._db.execute(f"PRAGMA max_page_count={pages}")
        for i in range(200):
            s.add_run("bandwidth", {"pad": "z" * 500, "i": i})
        assert any("database or disk is full" in n for n in s.notices)
        assert not s.damaged and not s.read_only  # a full disk is not damage
        assert s.is_read("kept")
        s._db.execute("PRAGMA max_page_count=1073741823")  # space freed
        s.mark_read("later")
        assert s.is_read("later")
    with Store(path) as s:
        assert {"kept", "later"} <= set(s.read_marks())
        assert s.pragma("integrity_check") == "ok"


def test_a_lock_held_too_long_by_another_instance_is_a_notice(tmp_path, monkeypatch):
    monkeypatch.setattr(Store, "busy_timeout_s", 0.2)
    path = tmp_path / "gpulab.sqlite3"
    with Store(path) as a:
        a.mark_read("first")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with Store(path) as b:
            b.mark_read("while-locked")
            assert any("database is locked" in n for n in b.notices)
            assert b.is_read("first")  # WAL: reading goes on under another's write lock
            holder.execute("ROLLBACK")
            b.mark_read("after")
            assert b.is_read("after")
    finally:
        holder.close()


WRITER = textwrap.dedent(
    """
    import sys
    from gpulab.store.database import Store
    with Store(sys.argv[1]) as s:
        for i in range(int(sys.argv[3])):
            s.mark_read(f"{sys.argv[2]}-{i}")
            s.record_answer(sys.argv[2], i, 0, True)
        print(len(s.notices))
    """
)


def test_two_instances_writing_at_once_lose_nothing(tmp_path):
    path = tmp_path / "gpulab.sqlite3"
    with Store(path) as a, Store(path) as b:  # two TUIs in one process' worth of threads
        for i in range(20):
            a.mark_read(f"a-{i}")
            b.mark_read(f"b-{i}")
        assert len(b.read_marks()) == 40 == len(a.read_marks())
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), name, "60"],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name in ("p", "q")
    ]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0] and outs == ["0", "0"]
    with Store(path) as s:
        marks = s.read_marks()
        assert len(marks) == 40 + 120
        assert len(s.answers("p")) == len(s.answers("q")) == 60
        assert s.pragma("integrity_check") == "ok"


# ------------------------------------------------------------------------ the data dir itself


def _no_run(*a: Any, **k: Any) -> int:
    raise AssertionError("the run started although the data dir is unusable")


def test_a_data_dir_that_is_a_file_is_refused_before_the_run(tmp_path, monkeypatch, capsys):
    import gpulab.runner.cli

    monkeypatch.setattr(gpulab.runner.cli, "run_headless", _no_run)
    target = tmp_path / "a-file"
    target.write_text("not a directory")
    assert cli.main(["--data-dir", str(target), "run", "montecarlo"]) == 2
    err = capsys.readouterr().err
    _one_line(err.strip())
    assert "is a file, not a directory" in err
    # Progress reads go on without it: the lessons list prints, with one line why.
    assert cli.main(["--data-dir", str(target), "lessons"]) == 0
    captured = capsys.readouterr()
    assert "lessons read" in captured.out and captured.err.count("\n") == 1


def test_an_unwritable_data_dir_is_refused_before_the_run(tmp_path, monkeypatch, capsys):
    import gpulab.core.datadir
    import gpulab.runner.cli

    monkeypatch.setattr(gpulab.runner.cli, "run_headless", _no_run)
    data = tmp_path / "data"
    data.mkdir()
    if ROOT:

        def refuse(*a: Any, **k: Any) -> Any:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(gpulab.core.datadir.tempfile, "TemporaryFile", refuse)
    else:
        data.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        assert cli.main(["--data-dir", str(data), "run", "montecarlo"]) == 2
        assert cli.main(["--data-dir", str(data), "bench", "--only", "montecarlo"]) == 2
    finally:
        data.chmod(0o755)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("is not writable" in line for line in err)


def test_blur_keeps_its_result_when_the_images_cannot_be_saved(tmp_path, monkeypatch):
    from gpulab.experiments.blur import Blur

    target = tmp_path / "a-file"
    target.write_text("")
    monkeypatch.setenv("GPULAB_DATA_DIR", str(target))
    logged: list[str] = []

    class Ctx:
        def log(self, line: str) -> None:
            logged.append(line)

    class Res:
        artifacts: list[Any] = []

    import numpy as np

    planes = np.zeros((3, 4, 4), dtype=np.float32)
    Blur._save(Ctx(), Res(), planes, planes, "box", "numpy")  # type: ignore[arg-type]
    assert Res.artifacts == [] and logged and "could not save the images" in logged[0]


def test_the_calibration_cache_never_raises_for_a_bad_data_dir(tmp_path, monkeypatch):
    from gpulab.core import peaks

    target = tmp_path / "a-file"
    target.write_text("")
    monkeypatch.setenv("GPULAB_DATA_DIR", str(target))
    assert peaks.data_dir() == target
    assert peaks._read("cpu-somewhere") is None


# ------------------------------------------------------------------------ OOM wording


def test_memory_errors_classify_as_out_of_memory():
    kind, message, _ = classify(MemoryError())
    assert kind == ev.KIND_OOM and message == "out of memory"

    class OutOfMemoryError(RuntimeError):  # torch's class, raised on the CPU allocator too
        pass

    text = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has ... of which 1.50 GiB is free"
    kind, message, extra = classify(OutOfMemoryError(text))
    assert kind == ev.KIND_OOM
    assert extra == {"requested_bytes": 2 * 2**30, "free_bytes": int(1.5 * 2**30)}
    assert "2.00 GiB" in message


# ------------------------------------------------------------------------ memory cgroups


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


GiB = 2**30
V2_MOUNT = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"


def _v2(root: Path, levels: dict[str, dict[str, str]]) -> Path:
    files = {
        "/proc/self/cgroup": "0::/user.slice/app.scope\n",
        "/proc/self/mountinfo": "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n" + V2_MOUNT,
        "/proc/meminfo": f"MemTotal: {64 * GiB // 1024} kB\nMemAvailable: {48 * GiB // 1024} kB\n",
        "/proc/vmstat": "pgfault 10\noom_kill 3\n",
    }
    for where, values in levels.items():
        for name, text in values.items():
            files[f"/sys/fs/cgroup{where}/{name}"] = text
    return _tree(root, files)


def test_cgroup_v2_walks_up_to_the_tightest_limit(tmp_path):
    root = _v2(
        tmp_path,
        {
            "": {"cgroup.controllers": "memory\n"},  # the root sets no memory.max
            "/user.slice": {
                "memory.max": f"{4 * GiB}\n",
                "memory.current": f"{3 * GiB}\n",
                "memory.stat": f"anon 1\ninactive_file {GiB // 2}\n",
            },
            "/user.slice/app.scope": {
                "memory.max": "max\n",
                "memory.current": f"{GiB}\n",
                "memory.stat": "inactive_file 0\n",
                "memory.events": "low 0\noom 1\noom_kill 2\n",
            },
        },
    )
    levels = hostmem.cgroup_levels(root)
    assert [lv.path.name for lv in levels] == ["app.scope", "user.slice", "cgroup"]
    # 4 GiB limit - (3 GiB used - 0.5 GiB reclaimable) = 1.5 GiB, below MemAvailable's 48.
    assert hostmem.cgroup_available(root) == int(1.5 * GiB)
    assert hostmem.host_available_bytes(root) == int(1.5 * GiB)
    assert hostmem.oom_kills(root) == 3 + 2


def test_cgroup_v1_in_a_namespace_and_no_limit(tmp_path):
    mountinfo = (
        "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
        "35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
    )
    base = "/sys/fs/cgroup/memory"
    root = _tree(
        tmp_path,
        {
            "/proc/self/cgroup": "4:memory:/docker/abc/job\n1:cpu,cpuacct:/\n0::/\n",
            "/proc/self/mountinfo": mountinfo,
            "/proc/meminfo": f"MemAvailable: {8 * GiB // 1024} kB\n",
            f"{base}/memory.limit_in_bytes": "9223372036854771712\n",  # no limit
            f"{base}/job/memory.limit_in_bytes": f"{2 * GiB}\n",
            f"{base}/job/memory.usage_in_bytes": f"{GiB}\n",
            f"{base}/job/memory.max_usage_in_bytes": f"{2 * GiB - 4096}\n",
            f"{base}/job/memory.stat": f"cache 5\ntotal_inactive_file {GiB // 4}\n",
            f"{base}/job/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
        },
    )
    levels = hostmem.cgroup_levels(root)
    assert [lv.version for lv in levels] == [1, 1] and levels[1].limit is None
    assert hostmem.cgroup_available(root) == GiB + GiB // 4
    assert hostmem.host_available_bytes(root) == GiB + GiB // 4
    # No OOM kill counted, but the peak touched the limit: probably out of memory.
    hint = hostmem.oom_hint(hostmem.oom_kills(root), root)
    assert hint and "2.00 GiB limit" in hint


def test_no_cgroup_limit_and_no_proc_leave_the_ram_figure_alone(tmp_path):
    root = _v2(tmp_path / "a", {"/user.slice/app.scope": {"memory.max": "max\n"}})
    assert hostmem.cgroup_available(root) is None
    assert hostmem.host_available_bytes(root) == 48 * GiB
    assert hostmem.oom_hint(hostmem.oom_kills(root), root) is None
    bare = tmp_path / "bare"
    bare.mkdir()
    assert hostmem.cgroup_levels(bare) == [] and hostmem.oom_kills(bare) is None


def test_an_oom_kill_counted_during_the_job_is_named(tmp_path):
    root = _v2(
        tmp_path,
        {
            "/user.slice/app.scope": {
                "memory.max": f"{8 * GiB}\n",
                "memory.current": f"{GiB}\n",
                "memory.events": "oom_kill 0\n",
            }
        },
    )
    before = hostmem.oom_kills(root)
    (root / "sys/fs/cgroup/user.slice/app.scope/memory.events").write_text("oom_kill 1\n")
    hint = hostmem.oom_hint(before, root)
    assert hint == "the kernel's out-of-memory killer ran; the memory limit here is 8.00 GiB"


@pytest.mark.parametrize("how", ["bad-page", "a-file"])
async def test_the_app_starts_and_opens_a_lesson_with_a_bad_data_dir(tmp_path, monkeypatch, how):
    from test_app import fake_app, notes, ready

    data = tmp_path / "data"
    if how == "a-file":
        data.write_text("not a directory")
    else:
        data.mkdir()
        path = data / "gpulab.sqlite3"
        _fill(path)
        page = _root_pages(path)["lessons_read"]
        raw = bytearray(path.read_bytes())
        raw[(page - 1) * PAGE : page * PAGE] = b"\x5a" * PAGE
        path.write_bytes(raw)
    monkeypatch.setenv("GPULAB_DATA_DIR", str(data))
    app = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        pane = app.query_one("#lessons")
        first = next(iter(pane.catalog)).id
        await pane.open_lesson(first)
        await pilot.pause()
        assert pane.current == first
        said = notes(app)
        if how == "a-file":
            assert any("Progress not saved" in n and str(data) in n for n in said), said
        else:
            assert any("progress could not be read" in n and "kept at" in n for n in said), said
