"""`gpulab lessons [--json]`: the syllabus by chapter with this person's progress."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from gpulab.core.doc_tags import tagged

if TYPE_CHECKING:
    from gpulab.lessons.catalog import Catalog
    from gpulab.store.database import QuizBest, ReadMark


def add_parser(sub: Any) -> None:
    """Register `gpulab lessons` on the subcommands."""
    lessons = sub.add_parser("lessons", help="list lessons and your progress")
    lessons.add_argument("--json", action="store_true", help="print JSON")


def progress_rows(
    catalog: Catalog, marks: dict[str, ReadMark], best: dict[str, QuizBest]
) -> list[dict[str, Any]]:
    """Each lesson with its read mark and best quiz score, as rows."""
    rows = []
    for lesson in catalog:
        mark, score = marks.get(lesson.id), best.get(lesson.id)
        rows.append(
            {
                "id": lesson.id,
                "chapter": lesson.chapter,
                "chapter_title": lesson.chapter_title,
                "order": lesson.order,
                "title": lesson.title,
                "read": mark is not None,
                "first_read_at": mark.first_read_at if mark else None,
                "last_read_at": mark.last_read_at if mark else None,
                "questions": len(lesson.quiz),
                "best_score": score.best_score if score else None,
                "best_total": score.total if score else None,
                "experiments": list(lesson.experiments),
            }
        )
    return rows


def _tick() -> str:
    try:
        "✓".encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return "*"
    return "✓"


def main(args: argparse.Namespace) -> int:
    """Print the lessons and the learner's progress (text or JSON)."""
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.lessons.catalog import load_catalog
    from gpulab.store.connection import StoreError
    from gpulab.store.database import Store

    catalog = load_catalog()
    warnings = list(catalog.problems)
    marks: dict[str, ReadMark] = {}
    best: dict[str, QuizBest] = {}
    try:
        with Store() as store:
            marks, best = store.read_marks(), store.best_scores()
            warnings.extend(store.notices)  # a damaged or read-only file: what could be read
    except StoreError as exc:  # still list the lessons; say why progress is missing
        text = str(exc)
        warnings.append(text if text.startswith("progress") else f"progress unavailable: {text}")
    rows = progress_rows(catalog, marks, best)
    if getattr(args, "json", False):
        read = sum(r["read"] for r in rows)
        out = {"lessons": rows, "read": read, "total": len(rows), "problems": warnings}
        print(json.dumps(tagged("lessons", out), indent=2))
        return 0
    for w in warnings:
        sys.stderr.write(f"gpulab: {w}\n")
    if not rows:
        print("No lessons installed.")
        return 0
    chapter = None
    for r in rows:
        if r["chapter"] != chapter:
            chapter = r["chapter"]
            print(f"{chapter:>2}  {r['chapter_title']}")
        mark = _tick() if r["read"] else " "
        quiz = (
            f"quiz {r['best_score']}/{r['best_total']}"
            if r["best_score"] is not None
            else f"quiz -/{r['questions']}"
        )
        print(f"    {mark} {r['id']:<26} {r['title'][:44]:<44} {quiz}")
    read = sum(r["read"] for r in rows)
    print(f"\n{read} of {len(rows)} lessons read. Open them in the TUI: gpulab")
    return 0
