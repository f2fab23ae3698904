"""Every JSON document the CLI writes says what it is (`schema`: gpulab.<kind>/<version>), and the
version has one source of truth. The CLI runs in this process, in CPU mode where there is no GPU."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from gpulab import __version__
from gpulab.cli import build_parser, main
from gpulab.core import doc_tags
from gpulab.doctor import gather
from gpulab.testing.doctor import healthy

ROOT = Path(__file__).resolve().parents[1]

# command -> (argv, kind). Each line of output (or the one document) must carry the tag.
JSON_COMMANDS = {
    "info": (["info", "--json"], "info"),
    "list": (["list", "--json"], "list"),
    "lessons": (["lessons", "--json"], "lessons"),
    "ex": (["ex", "--json"], "exercises"),
    "store": (["store", "--json"], "store"),
    "doctor": (["doctor", "--json"], "doctor"),
    "run": (["run", "montecarlo", "--set", "samples=1e4", "--json"], "event"),
    "history": (["history", "--json"], "history"),
    "predictions": (["predictions", "--json"], "predictions"),
}
# Commands whose --json writes a file, covered by their own tests.
COVERED_ELSEWHERE = {"bench": "tests/test_bench.py::test_quick_bench_writes_json_and_markdown"}


def _json_subcommands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        name
        for name, p in sub.choices.items()
        if any("--json" in a.option_strings for a in p._actions)
    }


def test_every_json_command_is_covered():
    missing = _json_subcommands() - set(JSON_COMMANDS) - set(COVERED_ELSEWHERE) - {"exercises"}
    assert not missing, f"add these to JSON_COMMANDS: {sorted(missing)}"


@pytest.mark.parametrize("command", sorted(JSON_COMMANDS))
def test_json_output_carries_its_schema(command, capsys, monkeypatch, tmp_path):
    argv, kind = JSON_COMMANDS[command]
    monkeypatch.setenv("GPULAB_WORKDIR", str(tmp_path / "work"))
    if command == "doctor":  # the real probe and worker are tested in test_doctor.py
        monkeypatch.setattr(gather, "gather", lambda nvml=None: healthy())
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 0, out
    if command == "run":  # one document per line, the runner's own events too
        lines = [json.loads(line) for line in out.splitlines() if line.strip()]
        assert lines and all(d["schema"] == doc_tags.tag("event") for d in lines)
        assert lines[-1]["type"] == "result"
        return
    doc = json.loads(out)
    assert isinstance(doc, dict) and next(iter(doc)) == "schema"
    assert doc["schema"] == doc_tags.tag(kind) == f"gpulab.{kind}/{doc_tags.VERSIONS[kind]}"


def test_tagged_puts_the_tag_first_and_leaves_the_input_alone():
    data = {"a": 1, "schema": "stale"}
    out = doc_tags.tagged("info", data)
    assert list(out) == ["schema", "a"] and out["schema"] == "gpulab.info/1"
    assert data == {"a": 1, "schema": "stale"}
    with pytest.raises(KeyError):
        doc_tags.tag("nonsense")


def test_one_version_and_the_changelog_has_it(capsys):
    pyproject = (ROOT / "pyproject.toml").read_text()
    project = pyproject.split("[project]", 1)[1].split("\n[", 1)[0]
    assert not re.search(r"^version\s*=", project, re.M), "the version lives in gpulab/__init__"
    assert re.search(r'^dynamic = \["version"\]', project, re.M)
    assert 'version = { attr = "gpulab.__version__" }' in pyproject
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"gpulab {__version__}"
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{__version__}]" in changelog


def test_history_documents_read_back_with_their_tag():
    """`history --json`, `history show --json` and an export carry the tag; import still reads
    them, and the tag is not kept as a field of the run."""
    from gpulab.history.transfer import parse

    run = {"experiment": "montecarlo", "status": "result", "rows": [], "params": {}}
    listed = json.dumps(doc_tags.tagged("history", {"runs": [run]}))
    shown = json.dumps(doc_tags.tagged("history", {**run, "format": "gpulab-run"}))
    for text in (listed, shown):
        (entry,) = parse(text, "doc")
        assert entry["experiment"] == "montecarlo" and "schema" not in entry
