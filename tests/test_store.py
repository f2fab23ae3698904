"""The progress database: WAL, durability across reopen and a killed writer, concurrency."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpulab.store.connection import StoreError
from gpulab.store.database import SCHEMA_VERSION, Store, default_path


def test_default_path_follows_the_data_dir_env(tmp_path, monkeypatch):
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path / "elsewhere"))
    assert default_path() == tmp_path / "elsewhere" / "gpulab.sqlite3"
    with Store() as s:
        s.mark_read("why-gpus")
    assert (tmp_path / "elsewhere" / "gpulab.sqlite3").exists()


def test_wal_full_sync_and_schema_version(tmp_path):
    with Store(tmp_path / "p.db") as s:
        assert s.pragma("journal_mode") == "wal"
        assert s.pragma("synchronous") == 2  # FULL
        assert s.pragma("user_version") == SCHEMA_VERSION


def test_progress_survives_reopening(tmp_path):
    path = tmp_path / "p.db"
    with Store(path) as s:
        s.mark_read("why-gpus", at=100.0)
        s.mark_read("why-gpus", at=200.0)
        s.record_answer("why-gpus", 0, 2, True)
        s.record_answer("why-gpus", 1, 0, False)
        assert s.record_quiz("why-gpus", 2, 3).best_score == 2
    with Store(path) as s:
        mark = s.read_marks()["why-gpus"]
        assert mark.first_read_at.startswith("1970-01-01T00:01:40")
        assert mark.last_read_at.startswith("1970-01-01T00:03:20")
        assert s.is_read("why-gpus") and not s.is_read("transfers")
        answers = s.answers("why-gpus")
        assert [(a.question_index, a.choice, a.correct) for a in answers] == [
            (0, 2, True),
            (1, 0, False),
        ]
        assert s.best_scores()["why-gpus"].best_score == 2


def test_best_score_only_improves(tmp_path):
    with Store(tmp_path / "p.db") as s:
        assert s.record_quiz("x", 1, 3).best_score == 1
        assert s.record_quiz("x", 3, 3).best_score == 3
        assert s.record_quiz("x", 0, 3).best_score == 3  # a worse try keeps the best
        best = s.best_scores()["x"]
        assert (best.best_score, best.total) == (3, 3)
        best = s.record_quiz("x", 3, 4)  # the quiz grew: 3/4 is below 3/3
        assert (best.best_score, best.total) == (3, 3)
        with pytest.raises(ValueError):
            s.record_quiz("x", 5, 4)


def test_runs_history(tmp_path):
    with Store(tmp_path / "p.db") as s:
        first = s.add_run("montecarlo", {"samples": 1000}, started_at=10.0)
        s.finish_run(first, "result", {"estimate": 3.14})
        s.add_run("matmul", {"sizes": [256]}, final_type="failed", summary={"kind": "exception"})
        runs = s.list_runs()
        assert [r.experiment for r in runs] == ["matmul", "montecarlo"]  # newest first
        mc = s.list_runs("montecarlo")[0]
        assert mc.params == {"samples": 1000} and mc.final_type == "result"
        assert mc.summary == {"estimate": 3.14}
        assert mc.started_at.startswith("1970-01-01T00:00:10")
        assert s.list_runs(limit=1)[0].experiment == "matmul"
        assert mc.to_dict()["params"] == {"samples": 1000}


def test_a_concurrent_reader_sees_committed_data(tmp_path):
    path = tmp_path / "p.db"
    writer, reader = Store(path), Store(path)
    try:
        assert reader.read_marks() == {}
        writer.mark_read("transfers")
        assert "transfers" in reader.read_marks()
        # a reader in the middle of a transaction does not block the writer (WAL)
        raw = sqlite3.connect(path, timeout=0.1)
        raw.execute("BEGIN")
        assert raw.execute("SELECT count(*) FROM lessons_read").fetchone()[0] == 1
        writer.mark_read("profiling")
        assert raw.execute("SELECT count(*) FROM lessons_read").fetchone()[0] == 1  # snapshot
        raw.execute("COMMIT")
        assert raw.execute("SELECT count(*) FROM lessons_read").fetchone()[0] == 2
        raw.close()
    finally:
        writer.close()
        reader.close()


WRITER = textwrap.dedent(
    """
    import sys
    from gpulab.store.database import Store
    s = Store(sys.argv[1])
    i = 0
    while True:
        s.record_answer("killed", i, i % 4, i % 2 == 0)
        print(i, flush=True)  # after the commit returned
        i += 1
    """
)


def test_a_killed_writer_loses_nothing_already_committed(tmp_path):
    path = tmp_path / "p.db"
    Store(path).close()
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])),
    )
    assert proc.stdout is not None
    seen = -1
    try:
        for line in proc.stdout:
            seen = int(line)
            if seen >= 200:
                break
    finally:
        proc.send_signal(signal.SIGKILL)  # no clean shutdown, no close(), mid-write likely
        proc.wait(timeout=30)
    assert seen >= 200
    with Store(path) as s:
        indices = [a.question_index for a in s.answers("killed")]
    assert indices[: seen + 1] == list(range(seen + 1))  # every acknowledged write is there
    assert len(indices) in (seen + 1, seen + 2)  # at most the one in flight besides
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_newer_schema_is_refused_with_one_line(tmp_path):
    path = tmp_path / "p.db"
    with sqlite3.connect(path) as raw:
        raw.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer gpulab") as info:
        Store(path)
    assert "\n" not in str(info.value)


def test_not_a_database_is_a_clear_error(tmp_path):
    path = tmp_path / "p.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a database; your file is kept at"):
        Store(path)


def test_a_failed_write_rolls_back_and_the_store_stays_usable(tmp_path):
    with Store(tmp_path / "p.db") as s:
        with pytest.raises(sqlite3.IntegrityError), s._write() as db:
            db.execute("INSERT INTO lessons_read VALUES ('a', 'x', 'x')")
            db.execute("INSERT INTO lessons_read VALUES ('a', 'x', 'x')")  # duplicate key
        assert s.read_marks() == {}
        s.mark_read("b")
        assert list(s.read_marks()) == ["b"]


def test_a_bug_in_the_sql_still_raises(tmp_path):
    """Faults of the file become notices (tests/test_faults.py); gpulab's own mistakes do not."""
    with Store(tmp_path / "p.db") as s:
        with pytest.raises(sqlite3.OperationalError, match="syntax error"):
            s._query("SELEC 1")
        with pytest.raises(sqlite3.OperationalError, match="no such column"), s._write() as db:
            db.execute("UPDATE runs SET nope = 1")
        assert not s.notices
