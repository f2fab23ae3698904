"""The lesson format and the real content: front matter, quizzes, links, measured values."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulab.lessons import catalog as cat
from gpulab.lessons import markup
from gpulab.lessons.catalog import load_catalog, parse_lesson
from gpulab.lessons.lesson_format import CHAPTER_LESSON_IDS, CHAPTERS, LessonFormatError
from gpulab.lessons.markup import parse_experiment_href, substitute_measured, validate_link
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


def test_filter_puts_title_and_heading_matches_first():
    c = load_catalog(strict=True)
    regimes = c.get("performance-regimes")
    assert "Access patterns and occupancy" in regimes.headings()
    assert regimes.match_rank("occupancy") == 0
    assert c.get("inside-the-gpu").match_rank("occupancy") == 2  # in its text only
    found = [le.id for le in c.filter("occupancy")]
    assert found[0] == "performance-regimes"  # before chapter 2, which comes first in order
    assert found.index("inside-the-gpu") > 0
    assert c.get("transfers").match_rank("no such words") is None


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
    # the fallback links to the experiment that measures it, and the unit is swallowed
    assert "(not measured yet: [run the calibrate experiment](experiment:calibrate))." in unknown


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


def test_measured_fallbacks_link_to_valid_experiments():
    """Every fallback that tells the learner to run something links to it, and the link works."""
    from gpulab.lessons.markup import extract_links
    from gpulab.lessons.measured import fallback

    for key in KEYS:
        text = fallback(key)
        links = extract_links(text)
        if "run the" in text:
            assert links, f"{key}: the fallback names an experiment without linking it"
        for link in links:
            assert validate_link(link) is None, f"{key}: {validate_link(link)}"
    assert [li.href for li in extract_links(fallback("matmul_tflops_fp64"))] == [
        "experiment:calibrate"
    ]
    assert [li.params for li in extract_links(fallback("cpu_matmul_gflops"))] == [{"cpu": "true"}]
    assert [li.experiment for li in extract_links(fallback("h2d_pageable_gbs"))] == ["bandwidth"]


def _bandwidth_result(pageable_gbs, max_size=2**30):
    """A bandwidth result shaped by the experiment's own summary code (no GPU needed)."""
    from gpulab.experiments.bandwidth_report import summary as bandwidth_summary

    curves = {
        "h2d-pageable": [(65536.0, 3.3), (float(max_size), pageable_gbs)],
        "h2d-pinned": [(65536.0, 20.0), (float(max_size), 55.0)],
    }
    summary = bandwidth_summary(curves, {}, None, None)
    return {
        "record": {"experiment": "bandwidth", "params": {"max_size": max_size}},
        "summary": summary,
    }


def test_pageable_bandwidth_comes_from_a_finished_bandwidth_run():
    from types import SimpleNamespace

    from gpulab.lessons.measured import PAGEABLE_MIN_BYTES, from_runs

    def state(gbs, status="result", max_size=2**30, experiment="bandwidth"):
        # the shape of the app's RunState: experiment, status, parsed params, result dict
        return SimpleNamespace(
            experiment=experiment,
            status=status,
            params={"min_size": 65536, "max_size": max_size},
            result=_bandwidth_result(gbs, max_size) if status == "result" else None,
        )

    assert from_runs([]) == {}
    assert from_runs([state(8.3)]) == {"h2d_pageable_gbs": 8.3}
    # newest first: the first usable run wins; failed, cancelled, other experiments are skipped
    runs = [state(0, "failed"), state(0, "cancelled"), state(9.9, experiment="vector-add")]
    assert from_runs([*runs, state(8.4), state(7.0)]) == {"h2d_pageable_gbs": 8.4}
    # a sweep that stopped at small copies measures the per-copy cost, not the rate
    small = state(3.3, max_size=PAGEABLE_MIN_BYTES // 2)
    assert from_runs([small]) == {}
    assert from_runs([small, state(8.1)]) == {"h2d_pageable_gbs": 8.1}
    # a CPU-only run has no pageable row
    cpu = state(1.0)
    del cpu.result["summary"]["largest_size_gbs"]["h2d-pageable"]
    assert from_runs([cpu]) == {}
    # the progress store's run history: final_type, params as typed, summary or whole result
    row = SimpleNamespace(
        experiment="bandwidth",
        final_type="result",
        params={"max_size": "1Gi"},
        summary=_bandwidth_result(8.2)["summary"],
    )
    assert from_runs([row]) == {"h2d_pageable_gbs": 8.2}
    assert from_runs([{**vars(row), "params": {"max_size": "64Ki"}}]) == {}
    m = Measured.collect(runs=[state(8.25)])
    assert m("h2d_pageable_gbs") == "8.2 GB/s"
    assert Measured.collect(runs=[small])("h2d_pageable_gbs").startswith("(not measured yet")


def test_pageable_bandwidth_from_the_progress_store(tmp_path):
    from gpulab.lessons.measured import from_runs
    from gpulab.store.database import Store

    with Store(tmp_path / "p.db") as store:
        run = store.add_run("bandwidth", {"min_size": "64Ki", "max_size": "1Gi"})
        assert from_runs(store.list_runs("bandwidth")) == {}  # still running
        store.finish_run(run, "result", _bandwidth_result(8.6))
        assert from_runs(store.list_runs("bandwidth")) == {"h2d_pageable_gbs": 8.6}


def test_measured_values_from_an_inventory():
    from gpulab.core.devices import DeviceInfo, Inventory

    inv = Inventory(
        devices=[DeviceInfo(0, "NVIDIA H200", "cuda", 141 * 2**30, "9.0", 132, "GPU-abc")]
    )
    m = Measured.collect(inv)
    assert m("gpu_name") == "NVIDIA H200"
    assert m("sm_count") == "132"
    assert m("memory_total_gib") == "141.0 GiB"  # one decimal, as the panes write it
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
        (_meta(chapter=99), "chapter 99"),
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


def test_the_chapters_with_the_fixed_ids(content):
    for number, lesson_id in enumerate(CHAPTER_LESSON_IDS, 1):
        assert lesson_id in content, f"lesson '{lesson_id}' (chapter {number}) is missing"
        assert content.get(lesson_id).chapter == number
    assert [ch.number for ch in content.chapters()] == sorted(CHAPTERS)


def test_quiz_size(content):
    for lesson in content:
        assert len(lesson.quiz) >= 3, f"{lesson.source}: {len(lesson.quiz)} questions, need 3"
    assert content.questions() >= 60


def _figures(measure) -> list[float]:
    """One figure inside each choice's range of a measured question, in the choices' order."""
    b = measure.bounds
    inner = [(lo + hi) / 2 for lo, hi in zip(b[:-1], b[1:], strict=True)]
    return [b[0] - 1, *inner, b[-1] + 1]


def test_every_question_has_one_correct_answer_and_an_explanation(content):
    """A keyed question has one right choice; a measured one has none written down, and every
    choice is the right one for some figure (each range of the probe's figure picks one)."""
    for lesson in content:
        for n, q in enumerate(lesson.quiz, 1):
            where = f"{lesson.source} question {n}"
            assert q.q.strip() and len(q.choices) >= 2, where
            assert len({c.strip().lower() for c in q.choices}) == len(q.choices), where
            assert len(q.explain.split()) >= 3, f"{where}: explanation too thin"
            if q.measure is not None:
                assert q.answer is None, where
                figures = _figures(q.measure)
                assert [q.right(f) for f in figures] == list(range(len(q.choices))), where
                for f in figures:
                    assert sum(q.is_correct(i, f) for i in range(len(q.choices))) == 1, where
                continue
            assert 0 <= q.answer < len(q.choices), where
            assert sum(q.is_correct(i) for i in range(len(q.choices))) == 1, where


NEW_CHAPTERS = range(18, 26)


def test_each_new_chapter_has_a_question_measured_on_the_learners_device(content):
    """Chapters 18 to 25 each ask one question whose answer is measured here, by a probe the
    worker knows, and say so in the question."""
    from gpulab.experiments.quiz_probes import PROBES

    for chapter in NEW_CHAPTERS:
        measured = [
            q for lesson in content if lesson.chapter == chapter for q in lesson.quiz if q.measure
        ]
        assert measured, f"chapter {chapter}: no measured question"
        for q in measured:
            assert q.measure.probe in PROBES and q.q.startswith("Predict, then measure"), q.q


def _keyed(questions):
    """The questions with an answer written down (a measured one's right choice depends on the
    machine, so its length, position or wording cannot give it away)."""
    return [q for q in questions if q.measure is None]


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


def test_front_matter_experiments_match_the_links(content):
    """The front matter's experiments list is what the lesson links: nothing missing or extra."""
    for lesson in content:
        linked = {link.experiment for link in lesson.links()}
        assert set(lesson.experiments) == linked, (
            f"{lesson.source}: front matter {sorted(lesson.experiments)}, links {sorted(linked)}"
        )
        assert len(set(lesson.experiments)) == len(lesson.experiments), lesson.source


def test_syllabus_experiments_are_linked_where_they_belong(content):
    def linked(lesson_id):
        return {link.experiment for link in content.get(lesson_id).links()}

    assert "in-place" in linked("memory-management")  # chapter 9
    assert "dtypes" in linked("dtypes-and-tensor-cores")  # chapter 11
    # where the lessons send the learner to calibrate (their figures come from it), a Run link;
    # everywhere else the measured-value fallback itself links it (see the fallback test)
    for lesson_id in ("why-gpus", "timing-honestly", "transfers", "dtypes-and-tensor-cores"):
        assert "calibrate" in linked(lesson_id), f"{lesson_id}: no calibrate link"


def test_dtype_table_matches_its_run_link(content):
    """Lesson 11's table is labelled with the size its Run link measures, and fp64 is in both."""
    lesson = content.get("dtypes-and-tensor-cores")
    race = [li for li in lesson.links() if li.experiment == "matmul"]
    assert len(race) == 1
    sizes = race[0].params["sizes"].split(",")
    dtypes = set(race[0].params["dtypes"].split(","))
    assert {"fp64", "fp32", "tf32", "fp16", "bf16"} <= dtypes
    assert sizes == ["8192"]
    assert "(8192 x 8192, cuBLAS" in lesson.body and "(4096)" not in lesson.body


def test_the_correct_answer_is_not_given_away_by_its_length(content):
    """Quiz choices are written so the right one is rarely the longest (a third at most), and
    no length rank (longest, second longest, ...) holds the answer in most questions."""
    from collections import Counter

    def length(choice):
        return len(choice.replace("`", ""))

    questions = _keyed(q for lesson in content for q in lesson.quiz)
    longest = 0
    ranks = Counter()
    for q in questions:
        lengths = [length(c) for c in q.choices]
        right = lengths[q.answer]
        others = lengths[: q.answer] + lengths[q.answer + 1 :]
        longest += right >= max(others)
        ranks[sorted(lengths, reverse=True).index(right)] += 1
    assert longest <= len(questions) / 3, f"correct choice longest in {longest}/{len(questions)}"
    rank, most = ranks.most_common(1)[0]
    assert most <= 0.4 * len(questions), f"length rank {rank} holds {most}/{len(questions)}"


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
        left = markup.MEASURED.findall(markup._without_code(shown))
        assert not left, f"{lesson.source}: placeholders left unfilled: {left}"


def _all_questions(content):
    return [
        (f"{le.source} question {n}", q)
        for le in content
        for n, q in enumerate(le.quiz, 1)
        if q.measure is None
    ]


def test_the_correct_answer_is_not_given_away_by_its_position(content):
    """Over the course each position holds the answer about equally often (15-35%), and no
    lesson puts every answer at the same position."""
    from collections import Counter

    questions = _all_questions(content)
    four = [q for _, q in questions if len(q.choices) == 4]
    positions = Counter(q.answer for q in four)
    for position in range(4):
        share = positions[position] / len(four)
        assert 0.15 <= share <= 0.35, f"answer at position {position} in {share:.0%} of questions"
    for lesson in content:
        answers = {q.answer for q in _keyed(lesson.quiz)}
        assert len(answers) > 1, f"{lesson.source}: every answer at position {answers.pop()}"


def test_no_correct_answer_stands_out_by_length(content):
    """Per question: the right choice is neither under half nor over twice the distractors'
    mean length, and it is the shortest in at most a third of the questions."""
    questions = _all_questions(content)
    shortest = 0
    for where, q in questions:
        lengths = [len(c.replace("`", "")) for c in q.choices]
        right = lengths[q.answer]
        others = lengths[: q.answer] + lengths[q.answer + 1 :]
        mean = sum(others) / len(others)
        assert 0.5 <= right / mean <= 2.0, f"{where}: answer {right} chars, distractors {mean:.0f}"
        shortest += right <= min(others)
    assert shortest <= len(questions) / 3, f"correct choice shortest in {shortest}"


def _length_guess_rate(questions, pick) -> dict[int, tuple[float, int]]:
    """Per number of choices k: how often a learner who always takes the longest (or shortest)
    choice is right, and over how many questions. A tie at the extreme counts as a guess among
    the tied choices, so four choices of one length give 1/4, which is chance."""
    credit: dict[int, float] = {}
    count: dict[int, int] = {}
    for q in questions:
        lengths = [len(c.replace("`", "")) for c in q.choices]
        extreme = pick(lengths)
        tied = [i for i, n in enumerate(lengths) if n == extreme]
        k = len(lengths)
        credit[k] = credit.get(k, 0.0) + (1.0 / len(tied) if q.answer in tied else 0.0)
        count[k] = count.get(k, 0) + 1
    return {k: (credit[k] / count[k], count[k]) for k in count}


def test_picking_the_longest_or_shortest_choice_is_no_better_than_chance(content):
    """Over every lesson, a learner who always picks the longest choice is right in no more than
    1/k + 10% of the questions with k choices, and the same for the shortest; and in no fewer
    than 1/k - 10%, or ruling out the longest (or shortest) would beat chance. The length of the
    right answer predicts nothing. (The new chapters once had the right answer longest in 21 of
    31 questions.)"""
    questions = _keyed(q for lesson in content for q in lesson.quiz)
    for name, pick in (("longest", max), ("shortest", min)):
        for k, (rate, n) in _length_guess_rate(questions, pick).items():
            assert 1 / k - 0.10 <= rate <= 1 / k + 0.10, (
                f"the {name} choice is right in {rate:.0%} of {n} questions with {k} choices"
            )


def test_no_lesson_leans_on_a_long_right_answer(content):
    """Per lesson: the right choice is longer than every other by more than 10% in at most a
    third of its questions, so no one chapter teaches that the long answer wins."""
    for lesson in content:
        long_by_far = 0
        for q in _keyed(lesson.quiz):
            lengths = [len(c.replace("`", "")) for c in q.choices]
            others = lengths[: q.answer] + lengths[q.answer + 1 :]
            long_by_far += lengths[q.answer] > 1.1 * max(others)
        assert long_by_far <= len(_keyed(lesson.quiz)) / 3, f"{lesson.source}: {long_by_far}"


def test_the_length_guess_rate_counts_ties_as_a_shared_guess():
    from gpulab.lessons.lesson_format import Question

    equal = Question("Q?", ("aaaa", "bbbb", "cccc", "dddd"), 2, "E.")
    longest = Question("Q?", ("a", "bb", "cccccc", "dd"), 2, "E.")
    shortest = Question("Q?", ("a", "bb", "cccccc", "dd"), 0, "E.")
    assert _length_guess_rate([equal], max) == {4: (0.25, 1)}
    assert _length_guess_rate([longest, shortest], max) == {4: (0.5, 2)}
    assert _length_guess_rate([longest, shortest], min) == {4: (0.5, 2)}


STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        "a an the of to in on is are and or for what which does do how with that this it its by be"
        " as at from your you why when after before than then",
    )
)


def question_similarity(a: str, b: str) -> float:
    """Jaccard similarity of character 4-grams of the normalized texts (lower case, words
    only, stop words dropped): rewording a few words of a question keeps it high."""

    def grams(text: str) -> set[str]:
        words = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS]
        joined = " ".join(words)
        return {joined[i : i + 4] for i in range(len(joined) - 3)}

    ga, gb = grams(a), grams(b)
    return len(ga & gb) / len(ga | gb) if ga | gb else 1.0


DUPLICATE = 0.2


def test_the_similarity_measure_catches_a_reworded_question():
    # two questions the course once asked twice (lessons 05 and 12), as they were worded
    first = (
        "`z = (x + 1) * 2 - 3` on a CuPy array of 100 million float32 values: how many kernels "
        "run? Three, one per operator, each reading and writing a full array"
    )
    second = (
        "In eager PyTorch, how many kernels does `w = (x + 1) * 2 - 3` launch on a CUDA tensor? "
        "Three, one per operator"
    )
    unrelated = "How many threads make up a warp on NVIDIA GPUs? 32"
    assert question_similarity(first, second) > DUPLICATE
    assert question_similarity(first, unrelated) < DUPLICATE / 2


def test_no_two_questions_are_duplicates(content):
    """Question text plus its correct answer, compared across the whole course."""
    from itertools import combinations

    texts = [(where, f"{q.q} {q.choices[q.answer]}") for where, q in _all_questions(content)]
    close = [
        f"{a} ~ {b} ({sim:.2f})"
        for (a, ta), (b, tb) in combinations(texts, 2)
        if (sim := question_similarity(ta, tb)) > DUPLICATE
    ]
    assert not close, "near-duplicate questions: " + "; ".join(close)


def test_some_questions_ask_for_a_prediction_a_run_answers(content):
    """ "Predict, then run ..." questions name an experiment the lesson links."""
    predicting = [
        (lesson, q) for lesson in content for q in _keyed(lesson.quiz) if q.q.startswith("Predict")
    ]
    assert len(predicting) >= 6
    for lesson, q in predicting:
        assert " run " in q.q and lesson.links(), f"{lesson.source}: {q.q[:60]}"


# Words that make a choice sound too sure. Test-wise learners read them as the mark of a wrong
# answer ("never", "always"), so they must not tell right from wrong in either direction.
ABSOLUTES = re.compile(r"(?<![-\w])(always|never|all|only|none|every|nothing)(?![-\w])", re.I)
ABSOLUTE_RATIO = 1.5


def _absolute_shares(questions) -> tuple[float, float, int, int]:
    wrong = right = n_wrong = n_right = 0
    for q in questions:
        for i, choice in enumerate(q.choices):
            sure = bool(ABSOLUTES.search(choice))
            if i == q.answer:
                n_right, right = n_right + 1, right + sure
            else:
                n_wrong, wrong = n_wrong + 1, wrong + sure
    return wrong / n_wrong, right / n_right, wrong, right


def test_absolute_words_do_not_tell_right_from_wrong(content):
    """The share of wrong choices holding an absolute ("always", "never", "all", "only", "none",
    "every", "nothing"; not inside a word such as "CPU-only" or "all-reduce") is within 1.5x of
    the share of right choices holding one, both ways. Once 30% of wrong choices and 11% of right
    ones held one: picking the choice without an absolute beat chance. A factor of 1.5 is about
    one right choice either way at the course's 70 questions, so it allows no pattern to grow."""
    wrong, right, n_wrong, n_right = _absolute_shares(q for _, q in _all_questions(content))
    assert n_right >= 2, "too few absolutes in right choices to compare shares"
    assert wrong <= ABSOLUTE_RATIO * right, (
        f"absolutes in {wrong:.0%} of wrong choices ({n_wrong}) against {right:.0%} of right "
        f"ones ({n_right}): the wording gives the answer away"
    )
    assert right <= ABSOLUTE_RATIO * wrong, (
        f"absolutes in {right:.0%} of right choices ({n_right}) against {wrong:.0%} of wrong "
        f"ones ({n_wrong}): the wording gives the answer away"
    )


def test_the_absolute_count_sees_words_not_parts_of_words():
    from gpulab.lessons.lesson_format import Question

    q = Question("Q?", ("never at all", "a CPU-only build", "an all-reduce", "none"), 3, "E.")
    wrong, right, n_wrong, n_right = _absolute_shares([q])
    assert (n_wrong, n_right) == (1, 1)


# ------------------------------------------------------------------ shuffled choices


def test_a_shuffled_question_tracks_its_answer(content):
    import random

    from gpulab.lessons.lesson_format import shuffle_quiz

    rng = random.Random(11)
    for lesson in content:
        for q, shown in zip(lesson.quiz, shuffle_quiz(lesson.quiz, rng), strict=True):
            assert sorted(shown.order) == list(range(len(q.choices)))
            assert sorted(shown.choices) == sorted(q.choices)
            assert shown.q == q.q and shown.explain == q.explain
            for figure in _figures(q.measure) if q.measure else [None]:
                at = shown.right_position(figure)
                assert shown.choices[at] == q.choices[q.right(figure)]
                assert [shown.is_correct(k, figure) for k in range(len(q.choices))].count(True) == 1
                assert shown.is_correct(at, figure)
            for k in range(len(q.choices)):
                assert shown.position(shown.original(k)) == k
                assert shown.choices[k] == q.choices[shown.original(k)]


def test_shuffles_repeat_under_a_seed_and_vary_without_one(content):
    import random

    from gpulab.lessons.lesson_format import shuffle_quiz

    quiz = [q for lesson in content for q in lesson.quiz]

    def orders(rng):
        return [s.order for s in shuffle_quiz(quiz, rng)]

    assert orders(random.Random(5)) == orders(random.Random(5))
    assert orders(random.Random(5)) != orders(random.Random(6))
    rng = random.Random(5)
    assert orders(rng) != orders(rng)  # the next attempt of the same quiz: a new order
    assert orders(random.Random()) != orders(random.Random())  # 24 ** 70 orders: never equal


def test_shuffling_spreads_the_answer_over_every_position():
    """Whatever position a lesson file gives the answer, an attempt shows it at each position
    about equally often, so a remembered letter is worth nothing on a retake."""
    import random
    from collections import Counter

    from gpulab.lessons.lesson_format import Question

    q = Question("Q?", ("right", "b", "c", "d"), 0, "E.")
    rng = random.Random(1)
    shown_at = Counter(q.shuffled(rng).answer for _ in range(4000))
    assert set(shown_at) == {0, 1, 2, 3}
    assert all(900 <= n <= 1100 for n in shown_at.values()), shown_at
