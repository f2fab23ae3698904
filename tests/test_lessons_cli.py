"""`gpulab lessons [--json]`: the syllabus with this person's progress, from the store."""

from __future__ import annotations

import json

from gpulab.cli import main
from gpulab.lessons.catalog import load_catalog
from gpulab.store.database import Store


def test_lessons_json_shows_progress_from_the_data_dir(tmp_path, capsys):
    catalog = load_catalog()
    first = catalog.lessons[0]
    data = tmp_path / "elsewhere"
    with Store(data / "gpulab.sqlite3") as s:
        s.mark_read(first.id)
        s.record_quiz(first.id, 2, 3)
    assert main(["--data-dir", str(data), "lessons", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["total"] == len(catalog) and out["read"] == 1
    rows = {r["id"]: r for r in out["lessons"]}
    assert [r["id"] for r in out["lessons"]] == [le.id for le in catalog]  # reading order
    assert rows[first.id]["read"] is True
    assert (rows[first.id]["best_score"], rows[first.id]["best_total"]) == (2, 3)
    assert rows[first.id]["questions"] == len(first.quiz)
    others = [r for r in out["lessons"] if r["id"] != first.id]
    assert all(not r["read"] and r["best_score"] is None for r in others)


def test_lessons_text_groups_by_chapter(tmp_path, capsys, monkeypatch):
    catalog = load_catalog()
    first = catalog.lessons[0]
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    with Store() as s:
        s.mark_read(first.id)
    assert main(["lessons"]) == 0
    out = capsys.readouterr().out
    for chapter in catalog.chapters():
        assert f"{chapter.number:>2}  {chapter.title}" in out
    line = next(li for li in out.splitlines() if f" {first.id} " in li)
    assert "✓" in line or "*" in line
    assert f"1 of {len(catalog)} lessons read" in out


def test_lessons_still_listed_when_the_store_is_broken(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    (tmp_path / "gpulab.sqlite3").write_bytes(b"garbage" * 200)
    assert main(["lessons", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["read"] == 0 and out["total"] == len(load_catalog())
    assert any("progress could not be read" in p and "kept at" in p for p in out["problems"])
