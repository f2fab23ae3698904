"""The lesson format and the real content: front matter, quizzes, links, measured values."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulab.lessons import catalog as cat
from gpulab.lessons.catalog import (
    CHAPTER_LESSON_IDS,
    CHAPTERS,
    LessonFormatError,
    load_catalog,
    parse_experiment_href,
    parse_lesson,
    substitute_measured,
    validate_link,
)
from gpulab.lessons.measured import KEYS, Measured

FIXTURES = Path(__file__).parent / "fixtures" / "lessons"
CONTENT = Path(cat.__file__).parent / "content"

# ------------------------------------------------------------------ the parser, on fixtures


def test_fixture_lessons_parse_in_reading_order():
    c = load_catalog(FIXTURES, strict=True)
    assert [le.id for le in c] == ["first-steps", "second-steps"]
    first = c.get("first-steps")
    assert first.chapter == 1 and first.title == "First steps on a GPU"
    assert first.objectives[1] == "Run the Monte Carlo experiment from a lesson"
    assert first.experiments == ("montecarlo",)
    assert first.quiz[1].choices == ("16", "32", "64")  # YAML numbers shown as text
    assert first.quiz[1].answer == 1 and first.quiz[1].is_correct(1)
    assert [ch.number for ch in c.chapters()] == [1, 2]
    assert c.chapters()[0].title == CHAPTERS[1]
    assert c.next("first-steps").id == "second-steps"
    assert c.next("second-steps") is None
    assert c.previous("second-steps").id == "first-steps"
    assert c.previous("first-steps") is None
    assert c.questions() == 3


def test_filter_searches_title_objectives_and_body():
    c = load_catalog(FIXTURES, strict=True)
    assert [le.id for le in c.filter("warm-up")] == ["second-steps"]  # body
    assert [le.id for le in c.filter("kernel launch")] == ["first-steps"]  # objective words
    assert [le.id for le in c.filter("SECOND")] == ["second-steps"]  # title, any case
    assert len(c.filter("")) == 2
    assert c.filter("no such words anywhere") == []


def test_links_are_parsed_outside_code_only():
    lesson = load_catalog(FIXTURES, strict=True).get("first-steps")
    links = lesson.links()
    assert [(li.experiment, li.params) for li in links] == [
        ("montecarlo", {"samples": "1e5", "seed": "7"})
    ]
    assert links[0].text == "Run it: a small Monte Carlo"
    assert validate_link(links[0]) is None


def test_href_parsing_keeps_plus_and_decodes_percent():
    assert parse_experiment_href("experiment:matmul?sizes=256,1024&dtypes=fp32%2Cbf16") == (
        "matmul",
        {"sizes": "256,1024", "dtypes": "fp32,bf16"},
    )
    assert parse_experiment_href("experiment:montecarlo?samples=1e+8")[1] == {"samples": "1e+8"}
    assert parse_experiment_href("experiment:montecarlo") == ("montecarlo", {})
    for bad in ("experiment:?a=1", "experiment:x?a", "experiment:x?a=1&a=2", "http://x"):
        with pytest.raises(ValueError):
            parse_experiment_href(bad)


def test_bad_link_params_are_reported():
    good = parse_lesson(
        (FIXTURES / "01-first-steps.md").read_text().replace("samples=1e5", "samples=many"),
        "x.md",
    )
    problem = validate_link(good.links()[0])
    assert problem is not None and "samples" in problem and "many" in problem
    unknown = good.links()[0].__class__("t", "experiment:nope", "nope", {})
    assert "unknown experiment 'nope'" in validate_link(unknown)


def test_code_blocks_carry_info_and_line():
    path = FIXTURES / "01-first-steps.md"
    blocks = load_catalog(FIXTURES, strict=True).get("first-steps").code_blocks()
    assert [b.info for b in blocks] == ["python runnable", "python runnable gpu", "python"]
    assert [(b.runnable, b.gpu) for b in blocks] == [(True, False), (True, True), (False, False)]
    lines = path.read_text().split("\n")
    for b in blocks:
        assert lines[b.line - 1].startswith("```" + b.info)
    assert "assert total == 45" in blocks[0].code


def test_display_markdown_fills_measured_and_plain_fences():
    lesson = load_catalog(FIXTURES, strict=True).get("first-steps")
    known = lesson.display_markdown(Measured({"gpu_name": "NVIDIA H100", "copy_gbs": 2931.7}))
    assert "This GPU is NVIDIA H100" in known
    assert "2,932 GB/s." in known and "GB/s GB/s" not in known
    assert "```python\n" in known and "runnable" not in known
    unknown = lesson.display_markdown(Measured({}))
    assert "{{" not in unknown
    assert "(not known yet: see the GPU info pane)" in unknown
    assert "(not measured yet: run the calibrate experiment)." in unknown  # unit swallowed


def test_measured_values_come_from_the_calibration_cache(tmp_path, monkeypatch):
    import json

    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    (tmp_path / "peaks").mkdir()
    gpu = {
        "key": "gpu-1",
        "device": "NVIDIA H100 80GB HBM3",
        "cpu": False,
        "copy_gbs": 2900.0,
        "h2d_pinned_gbs": 55.2,
        "matmul_tflops": {"bf16": 780.4},
        "measured_at": 2.0,
    }
    cpu = {
        "key": "cpu-1",
        "device": "CPU",
        "cpu": True,
        "copy_gbs": 12.5,
        "matmul_tflops": {"fp32": 0.35},
        "measured_at": 1.0,
    }
    (tmp_path / "peaks" / "gpu.json").write_text(json.dumps(gpu))
    (tmp_path / "peaks" / "cpu.json").write_text(json.dumps(cpu))
    (tmp_path / "peaks" / "corrupt.json").write_text("{not json")
    m = Measured.collect()
    assert m("copy_gbs") == "2,900 GB/s"
    assert m("h2d_pinned_gbs") == "55.2 GB/s"
    assert m("matmul_tflops_bf16") == "780 TFLOP/s"
    assert m("cpu_copy_gbs") == "12.5 GB/s"
    assert m("cpu_matmul_gflops") == "350 GFLOP/s"
    assert m("gpu_name") == "NVIDIA H100 80GB HBM3"
    assert m("matmul_tflops_fp64").startswith("(not measured yet")
    assert m("no_such_key") == "(not a known measurement)"


def test_measured_values_from_an_inventory():
    from gpulab.core.devices import DeviceInfo, Inventory

    inv = Inventory(
        devices=[DeviceInfo(0, "NVIDIA H200", "cuda", 141 * 2**30, "9.0", 132, "GPU-abc")]
    )
    m = Measured.collect(inv)
    assert m("gpu_name") == "NVIDIA H200"
    assert m("sm_count") == "132"
    assert m("memory_total_gib") == "141 GiB"
    assert m("compute_capability") == "9.0"
    assert Measured.collect(inv.to_dict())("gpu_name") == "NVIDIA H200"


def test_measured_values_from_telemetry_with_unknowns():
    from gpulab.telemetry.inventory import GpuInventory, SystemInventory
    from gpulab.telemetry.values import NA

    gpu = GpuInventory(
        nvml_index=0,
        cuda_index=0,
        name="NVIDIA H100 80GB HBM3",
        l2_cache=50 * 2**20,
        memory_total=int(79.6 * 2**30),
        sm_count=NA("the worker reports it; not ready yet"),
    )
    m = Measured.collect(telemetry=SystemInventory(available=True, gpus=[gpu]))
    assert m("gpu_name") == "NVIDIA H100 80GB HBM3"
    assert m("l2_mib") == "50 MiB"
    assert m("memory_total_gib") == "79.6 GiB"
    assert m("sm_count") == "(not known yet: see the GPU info pane)"  # NA is unknown, not "N/A"
    assert m("compute_capability").startswith("(not known yet")


def test_measured_values_import_no_gpu_runtime():
    import subprocess
    import sys

    code = (
        "from gpulab.lessons.catalog import default_catalog\n"
        "from gpulab.lessons.measured import Measured\n"
        "m = Measured.collect()\n"
        "[le.display_markdown(m) for le in default_catalog()]\n"
        "import sys; print('torch' in sys.modules, 'cupy' in sys.modules, 'textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "False"]


def test_substitution_leaves_code_alone():
    body = "Rate {{measured:copy_gbs}} GB/s\n```python\nx = '{{measured:copy_gbs}}'\n```\n"
    out = substitute_measured(body, lambda k: "7 GB/s")
    assert out.startswith("Rate 7 GB/s\n") and "x = '{{measured:copy_gbs}}'" in out


BROKEN = [
    ("no front matter", "# just a body\n", "no front matter"),
    ("bad yaml", "---\nid: [x\n---\nbody\n", "not valid YAML"),
    ("missing key", "---\nid: x\n---\nbody\n", "missing key(s)"),
]


def _meta(**over: object) -> str:
    import yaml

    meta = {
        "id": "x",
        "chapter": 1,
        "order": 1,
        "title": "T",
        "objectives": ["o"],
        "experiments": [],
        "quiz": [{"q": "Q?", "choices": ["a", "b"], "answer": 0, "explain": "E."}],
    }
    meta.update(over)
    return "---\n" + yaml.safe_dump(meta) + "---\n\nBody.\n"


@pytest.mark.parametrize(
    "text, expected",
    [(t, e) for _, t, e in BROKEN]
    + [
        (_meta(chapter=18), "chapter 18"),
        (_meta(chapter=True), "chapter True"),
        (_meta(id="Bad Id"), "id 'Bad Id'"),
        (_meta(title=""), "title"),
        (_meta(objectives=[]), "objectives"),
        (_meta(extra=1), "unknown key(s) extra"),
        (_meta(quiz=[{"q": "Q", "choices": ["a"], "answer": 0, "explain": "E"}]), "at least 2"),
        (_meta(quiz=[{"q": "Q", "choices": ["a", "a"], "answer": 0, "explain": "E"}]), "same"),
        (_meta(quiz=[{"q": "Q", "choices": ["a", "b"], "answer": 2, "explain": "E"}]), "answer 2"),
        (_meta(quiz=[{"q": "Q", "choices": ["a", "b"], "answer": "1", "explain": "E"}]), "answer"),
        (_meta(quiz=[{"q": "Q", "choices": ["a", "b"], "answer": 0, "explain": ""}]), "explain"),
        (_meta(quiz=[{"q": "Q", "choices": ["a", "b"], "answer": 0}]), "missing key(s) explain"),
        (_meta().replace("Body.", ""), "no body"),
        (_meta().replace("Body.", "[x](experiment:m?a)"), "NAME=VALUE"),
    ],
)
def test_format_errors_name_the_file(text, expected):
    with pytest.raises(LessonFormatError) as info:
        lesson = parse_lesson(text, "07-broken.md")
        lesson.links()
    message = str(info.value)
    assert message.startswith("07-broken.md: ")
    assert expected in message
    assert "\n" not in message


def test_a_broken_file_does_not_hide_the_others():
    c = load_catalog(FIXTURES / "bad")
    assert [le.id for le in c] == ["fine"]
    assert len(c.problems) == 1 and c.problems[0].startswith("01-bad-answer.md: ")
    with pytest.raises(LessonFormatError, match="01-bad-answer.md"):
        load_catalog(FIXTURES / "bad", strict=True)


def test_duplicate_ids_are_refused(tmp_path):
    text = (FIXTURES / "02-second-steps.md").read_text()
    (tmp_path / "a.md").write_text(text)
    (tmp_path / "b.md").write_text(text)
    c = load_catalog(tmp_path)
    assert len(c) == 1 and "also used by a.md" in c.problems[0]


# ------------------------------------------------------------------ the real content


@pytest.fixture(scope="module")
def content():
    return load_catalog(strict=True)


def test_every_content_file_loads(content):
    files = sorted(p.name for p in CONTENT.glob("*.md"))
    assert files, "no lessons in gpulab/lessons/content"
    assert len(content) == len(files)
    for lesson in content:
        assert re.match(rf"^{lesson.chapter:02d}-", lesson.source), (
            f"{lesson.source}: file name should start with the chapter number"
        )


def test_content_is_found_through_the_package():
    # importlib.resources, not a path next to the tests: this is how an installed gpulab reads it
    assert len(cat._content_files()) == len(list(CONTENT.glob("*.md")))


def test_seventeen_chapters_with_the_fixed_ids(content):
    for number, lesson_id in enumerate(CHAPTER_LESSON_IDS, 1):
        assert lesson_id in content, f"lesson '{lesson_id}' (chapter {number}) is missing"
        assert content.get(lesson_id).chapter == number
    assert [ch.number for ch in content.chapters()] == list(range(1, 18))


def test_quiz_size(content):
    for lesson in content:
        assert len(lesson.quiz) >= 3, f"{lesson.source}: {len(lesson.quiz)} questions, need 3"
    assert content.questions() >= 60


def test_every_question_has_one_correct_answer_and_an_explanation(content):
    for lesson in content:
        for n, q in enumerate(lesson.quiz, 1):
            where = f"{lesson.source} question {n}"
            assert q.q.strip() and len(q.choices) >= 2, where
            assert 0 <= q.answer < len(q.choices), where
            assert len({c.strip().lower() for c in q.choices}) == len(q.choices), where
            assert sum(q.is_correct(i) for i in range(len(q.choices))) == 1, where
            assert len(q.explain.split()) >= 3, f"{where}: explanation too thin"


def test_every_experiment_link_resolves_with_valid_params(content):
    problems = []
    for lesson in content:
        for link in lesson.links():
            problem = validate_link(link)
            if problem:
                problems.append(f"{lesson.source}: {problem}")
            elif link.experiment not in lesson.experiments:
                problems.append(
                    f"{lesson.source}: links to '{link.experiment}' but its front matter "
                    f"experiments list does not name it"
                )
    assert not problems, "\n".join(problems)


def test_front_matter_experiments_are_registered(content):
    from gpulab.experiments.registry import all_experiments

    known = set(all_experiments())
    missing = [
        f"{le.source}: {exp}" for le in content for exp in le.experiments if exp not in known
    ]
    assert not missing, "unregistered experiments: " + ", ".join(missing)


def test_every_lesson_links_an_experiment_and_has_sections(content):
    for lesson in content:
        assert lesson.links(), f"{lesson.source}: no 'Run it' link"
        assert re.search(r"^## ", lesson.body, re.M), f"{lesson.source}: no ## sections"


def test_measured_placeholders_use_known_keys(content):
    for lesson in content:
        for key in lesson.measured_keys():
            assert key in KEYS, f"{lesson.source}: unknown measured key '{key}'"
        shown = lesson.display_markdown(Measured({}))
        left = cat.MEASURED.findall(cat._without_code(shown))
        assert not left, f"{lesson.source}: placeholders left unfilled: {left}"
