"""Sentences the lessons once got wrong stay gone, and what replaced them stays said.

Each test names the claim it guards against and reads the text a learner sees: a lesson's body,
its quiz (questions, choices and explanations), an experiment's explanation, an exercise's hints.
They are grep-style on purpose: a rewording that brings a claim back should fail here, and a
rewording that keeps the correction should not.
"""

from __future__ import annotations

import inspect
import re

import pytest

from gpulab.lessons.catalog import Lesson, load_catalog


@pytest.fixture(scope="module")
def lessons() -> dict[str, Lesson]:
    return {le.source[:2]: le for le in load_catalog(strict=True)}


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _quiz(lesson: Lesson) -> str:
    return _flat(" ".join(f"{q.q} {' '.join(q.choices)} {q.explain}" for q in lesson.quiz))


def _all(lesson: Lesson) -> str:
    return _flat(lesson.body) + " " + _quiz(lesson)


def _sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.!?])\s+", _flat(text))


def test_a_non_blocking_copy_is_ordered_on_its_stream(lessons):
    """Lesson 06 said a pinned non_blocking copy overlaps whatever the GPU does next, and lesson
    10's quiz that it lets the next batch travel while the GPU computes; on the current stream,
    later kernels wait for it (lesson 10's text). Every sentence that puts non_blocking and
    overlap together must say which stream, or that the overlap is with the host."""
    assert "overlaps with whatever the GPU" not in _all(lessons["06"])
    assert "overlaps with later work" not in lessons["06"].body
    assert "next batch travel while the GPU computes" not in _all(lessons["10"])
    for key in ("06", "10"):
        text = _all(lessons[key])
        assert "current stream" in text, key
        assert "second stream" in text, key
    for lesson in lessons.values():
        for s in _sentences(lesson.body + " " + _quiz(lesson)):
            if "non_blocking" in s and "overlap" in s:
                assert re.search(r"stream|host|CPU", s), f"{lesson.source}: {s}"


def test_lesson_10s_quiz_names_no_choice_it_does_not_offer(lessons):
    """An explanation once answered a float64 choice that no longer existed."""
    for q in lessons["10"].quiz:
        if "float64" in q.explain:
            assert "float64" in q.q + " ".join(q.choices), q.q


def test_cuda_events_time_a_stream_interval(lessons):
    text = _flat(lessons["07"].body)
    assert "so they measure device time" not in text
    assert "one stream's order" in text and "other streams" in text


def test_an_sm_has_four_schedulers(lessons):
    """An H100 SM issues from up to 4 warps a cycle, one per scheduler, not from one."""
    text = _all(lessons["02"])
    assert "each cycle issues from one that is ready" not in text
    assert "four warp schedulers" in text and "each scheduler" in text


def test_occupancy_is_warps_to_hide_latency_not_a_thread_count(lessons):
    text = _flat(lessons["02"].body)
    assert "at least 132 x 2048" not in text
    assert "270,336" in text and "not a requirement" in text


def test_coalescing_is_taught_in_32_byte_sectors(lessons):
    text = _flat(lessons["12"].body)
    assert "one 128-byte transaction" not in text
    assert "32-byte sectors" in text


def test_no_dtype_list_gives_t4_or_v100_bf16_or_tf32(lessons):
    """bf16 and tf32 tensor cores came with Ampere; V100 has fp16, T4 fp16 and int8."""
    for lesson in lessons.values():
        for s in _sentences(lesson.body):
            if re.search(r"\b(T4|V100)\b", s) and re.search(r"\b(bf16|tf32)\b", s):
                assert re.search(r"\bno\b|not|without", s), f"{lesson.source}: {s}"
    text = _flat(lessons["11"].body)
    assert "fp16, bf16, tf32, int8, fp8 on Hopper" not in text
    assert "(V100, compute capability 7.0): fp16 only" in text
    assert "still no bf16 or tf32" in text


def test_nccl_is_not_said_to_avoid_pcie(lessons):
    text = _flat(lessons["15"].body)
    assert "never PCIe" not in text
    for transport in ("NVLink", "PCIe", "InfiniBand", "RoCE", "sockets"):
        assert transport in text, transport


def test_busbw_ceiling_depends_on_the_algorithm(lessons):
    """A ring's busbw is capped by the slowest link; NVLS on NVSwitch can report more."""
    from gpulab.experiments import allreduce

    text = _flat(lessons["15"].body)
    assert "It cannot exceed one link's rate" not in text
    assert "slowest link per direction" in text and "NVLS" in text
    source = re.sub(r'"\s*"', "", _flat(inspect.getsource(allreduce)))  # literals joined
    assert "NVLS" in source and "slowest link per direction" in source
    assert "Above 100% is possible on NVSwitch systems" in source


def test_a_stuck_collective_also_shows_full_utilisation(lessons):
    text = _flat(lessons["16"].body)
    assert "100% utilisation with no progress suggests a runaway kernel" not in text
    hit = next(s for s in _sentences(lessons["16"].body) if "100% utilisation" in s)
    assert "runaway kernel" in hit and "stuck in an NCCL collective" in hit


def test_the_copy_model_counts_both_directions_of_a_device_copy(lessons):
    """A device copy's 2.9 TB/s counts bytes read plus bytes written: copying S bytes moves 2S."""
    code = "\n".join(b.code for b in lessons["10"].code_blocks())
    assert "t = latency_s + size / (gbs * 1e9)" not in code
    assert "moved * size" in code


def test_mixed_precision_promises_no_fixed_speedup(lessons):
    from gpulab.experiments import mixed_precision

    source = _flat(inspect.getsource(mixed_precision))
    assert "so each step is several times faster" not in source
    assert "little or nothing" in source
    assert "may gain nothing" in _flat(lessons["13"].body)


def test_figure_tables_give_the_h200_beside_the_h100(lessons):
    """The lab runs on both: a table of H100 figures has the H200's beside them."""
    for lesson in lessons.values():
        tables, current = [], []
        for line in lesson.body.splitlines() + [""]:
            if line.startswith("|"):
                current.append(line)
            elif current:
                tables.append("\n".join(current))
                current = []
        for table in tables:
            if "H100" in table:
                assert "H200" in table, f"{lesson.source}: a table of H100 figures alone"


def test_the_h200_memory_figure_is_its_datasheets(lessons):
    for key in ("02", "10"):
        assert "4.8 TB/s" in _flat(lessons[key].body), key


def test_the_fixed_quiz_questions_stay_fixed(lessons):
    # 01: Amdahl's 20x is a limit, approached and never reached with a finite number of lanes
    amdahl = next(q for q in lessons["01"].quiz if "95%" in q.q)
    right = amdahl.choices[amdahl.answer]
    assert "20x" in right and "never reaches" in right
    assert not any("however many" in c for c in amdahl.choices)
    # 17: separability saves multiply-adds; whether that is faster on a GPU is measured
    quiz17 = _quiz(lessons["17"])
    assert "Why does that matter on a GPU" not in quiz17
    separable = next(q for q in lessons["17"].quiz if "separable" in q.q)
    assert "10 multiply-adds" in separable.choices[separable.answer]


def test_exercise_04_does_not_synchronize_for_host_counters():
    from gpulab.exercises.loader import load_catalog as load_exercises

    tracker = next(ex for ex in load_exercises() if ex.id == "memory-tracker")
    hints = " ".join(tracker.hints)
    assert "Synchronize first" not in hints
    assert "need no synchronize" in hints
