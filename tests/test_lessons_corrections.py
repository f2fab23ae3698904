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


# ---- the expert review of the new chapters (lesson 14's second half, 18 to 24) --------------


def _exercise(ex_id: str):
    from gpulab.exercises.loader import load_catalog as load_exercises

    return next(ex for ex in load_exercises() if ex.id == ex_id)


def _statement(ex_id: str) -> str:
    return _flat(_exercise(ex_id).statement)


def _code(lesson: Lesson) -> str:
    return "\n".join(b.code for b in lesson.code_blocks())


def test_a_masked_triton_load_has_no_default_value(lessons):
    """`tl.load`'s `other` has no default: masked elements are unspecified (zero on today's
    NVIDIA backend by accident). The lesson once called 0.0 "the default" and exercise 52's hint
    said masked lanes load 0."""
    text = _all(lessons["21"])
    assert "(the default)" not in text
    assert "unspecified" in text and "always pass" in text.lower()
    hints = " ".join(_exercise("triton-matmul").hints)
    assert "Masked lanes load 0" not in hints
    assert "other=" in hints and "unspecified" in hints
    # every masked load the lesson's own code makes says what masked elements read
    for block in lessons["21"].code_blocks():
        for line in block.code.splitlines():
            if "tl.load(" in line and "mask=" in line:
                assert "other=" in line, line


def test_tl_dot_on_float32_is_taught_as_tf32_by_default(lessons):
    text = _all(lessons["21"])
    assert "input_precision" in text and '"ieee"' in text and "TF32" in text


def test_copies_to_the_host_are_not_said_to_go_through_local_scalar_dense(lessons):
    """Only scalar reads end in aten::_local_scalar_dense; .cpu(), .tolist(), print and the
    data-dependent operators sync under other operators (measured on an H200). The lesson once
    said they "all end in `aten::_local_scalar_dense`"."""
    text = _flat(lessons["23"].body)
    assert "all end in `aten::_local_scalar_dense`" not in text
    assert "search the profile for `cudaStreamSynchronize`" in text
    hit = next(s for s in _sentences(lessons["23"].body) if "`t.tolist()`" in s)
    assert "_local_scalar_dense" not in hit
    assert "no `_local_scalar_dense`" in text


def test_index_put_accumulate_is_not_listed_as_nondeterministic_on_cuda(lessons):
    """index_put_(accumulate=True) on CUDA sorts its indices: 1 result in 10 runs on an H200,
    where index_add_ and scatter_add_ gave 10. Any sentence naming it must say it is not."""
    for s in _sentences(lessons["24"].body + " " + lessons["24"].quiz[1].explain):
        if "index_put_" in s:
            assert re.search(r"\bnot\b|sorts", s), s


def test_the_unfused_softmax_is_eight_passes_not_five(lessons):
    """Exercise 51's statement once said the five eager ops go through memory five times; lesson
    21's quiz counts about eight passes against the fused kernel's two. The causal softmax that
    replaced it counts its three library kernels as six passes, a read and a write each."""
    statement = _statement("triton-causal-softmax")
    assert "goes through memory five times" not in statement
    assert "three kernels and six passes" in statement
    assert "eight passes" in _quiz(lessons["21"])


def test_the_last_block_pattern_fences_before_its_ticket(lessons):
    """The "last block" reduction needs __threadfence() between the block's slot and its atomic
    ticket; the lesson shows the pattern with it, and exercise 18's statement says so."""
    code = next(b.code for b in lessons["24"].code_blocks() if "ticket" in b.code)
    assert code.index("__threadfence()") < code.index("atomicAdd(ticket")
    assert code.index("partial[blockIdx.x]") < code.index("__threadfence()")
    assert "__threadfence()" in _statement("deterministic-sum")


def test_double_atomics_are_not_taught_as_a_fixed_order(lessons):
    text = _flat(lessons["24"].body)
    assert "into a **double**" in text and "does not fix the order" in text


def test_a_kernel_can_be_latency_bound_and_littles_law_says_why(lessons):
    """Lesson 14 once had two regimes (bytes or arithmetic) and told a kernel at 91% occupancy
    and 49% of DRAM that latency was hidden. Little's law: bytes in flight = bandwidth x latency."""
    text = _all(lessons["14"])
    assert "bound either by the bytes it moves or by the arithmetic it does" not in text
    assert "occupancy is already high enough to hide latency" not in text
    assert "latency-bound" in text and "Little's law" in text
    assert "bytes in flight" in text and "bandwidth times the latency" in text
    for s in _sentences(lessons["14"].body):
        assert not re.search(r"more warps (would )?change nothing", s), s
    assert "few bytes in flight" in _flat(lessons["14"].body + " " + _docs("explain.md"))


def _docs(name: str) -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[1] / "docs" / name).read_text()


def test_racecheck_is_taught_as_shared_memory_only(lessons):
    text = _flat(lessons["14"].body)
    assert "out-of-bounds access or race." not in text
    assert "shared-memory race" in text and "**shared memory** only" in text
    assert "initcheck" in text and "synccheck" in text


def test_the_tensor_core_roof_and_the_shared_memory_bound_are_shown(lessons):
    text = _flat(lessons["14"].body)
    assert "tensor-core peak" in text and "295 FLOP/B" in text and "206 FLOP/B" in text
    assert "right of the ridge, compute-bound." not in text
    assert "bound by shared-memory bandwidth" in text


def test_record_stream_waits_for_the_work_queued_at_the_free(lessons):
    """record_stream protects the block until the work queued on the stream *when the tensor is
    freed* is done, not the work queued when it is called."""
    text = _all(lessons["18"])
    assert "queued so far" not in text
    assert "at the moment of the free" in text
    assert "not deterministic" in text


def test_a_side_stream_is_made_once_and_the_pool_is_named(lessons):
    """torch.cuda.Stream() hands out one of 32 pooled streams; the lesson's own timing block once
    made one per timed call, against its own advice."""
    text = _flat(lessons["18"].body)
    assert "pool of 32 streams" in text
    for block in lessons["18"].code_blocks():
        inside_def = False
        for line in block.code.splitlines():
            if line.startswith("def "):
                inside_def = True
            elif line and not line[0].isspace():
                inside_def = False
            if inside_def:
                assert "torch.cuda.Stream()" not in line, line


def test_the_non_blocking_traps_and_the_pageable_wait_are_taught(lessons):
    text = _flat(lessons["18"].body)
    assert "**Device to host, it returns before the data is there.**" in text
    assert "**`pin_memory()` is itself a copy.**" in text
    assert "may first wait for the work already queued" in text
    assert "behaves much like a blocking copy: the CPU is busy, and there is nothing" not in text
    assert "cupy.cuda.Stream()` makes a blocking stream" in text


def test_graphs_can_branch_on_the_device(lessons):
    text = _flat(lessons["19"].body)
    assert "A graph has no branches" not in text
    assert "conditional nodes" in text and "12.4" in text
    assert "cudaGraphExecUpdate" in text and "graph_pool_handle" in text
    assert 'capture_error_mode="thread_local"' in text


def test_the_graph_saving_is_not_called_the_launch_cost(lessons):
    """(eager - graph) / kernels is the time saved per kernel, a lower bound on the launch cost;
    the eager time per kernel is the CPU's cost, the kernel's own time hidden under it."""
    text = _all(lessons["19"])
    assert "launch overhead saved per kernel" not in text
    assert "counts the kernel's own work too" not in text
    assert "time saved per kernel" in text and "lower bound" in text


def test_shfl_xor_names_its_third_argument_and_exited_lanes_are_allowed(lessons):
    text = _flat(lessons["20"].body)
    assert "`lane ^ mask`" not in text
    assert "laneMask" in text and "has not exited" in text


def test_warp_votes_and_the_aggregated_atomic_are_taught(lessons):
    text = _flat(lessons["20"].body)
    for word in ("__ballot_sync", "__any_sync", "__all_sync", "__match_any_sync", "__activemask"):
        assert word in text, word
    assert "does not converge" in text and "warp-aggregated atomic" in text


def test_the_fp16_accumulator_figure_is_for_products(lessons):
    text = _flat(lessons["21"].body)
    assert "after 2000 terms of size 1" not in text
    assert "2000 products of values in [-1, 1]" in text


def test_the_triton_launch_figures_are_dated_against_the_lead_spin(lessons):
    """The 53% / 74% figures predate the grader's 200 us lead spin, which hides launch latency."""
    hit = next(s for s in _sentences(lessons["21"].body) if "53%" in s)
    assert "before the grader" in hit
    assert "200 us spin" in _flat(lessons["21"].body)
    assert "a Triton launch costs the host tens of microseconds, which a" not in _statement(
        "triton-affine-clamp"
    )


def test_grouped_program_ordering_is_explained(lessons):
    text = _flat(lessons["21"].body)
    assert "**Grouped ordering**" in text and "rows_here" in _code(lessons["21"])


def test_compile_modes_and_fullgraph_are_taught(lessons):
    text = _all(lessons["22"])
    assert "stay library calls (cuBLAS, cuDNN), with their bias" not in text
    assert "max-autotune" in text and "fullgraph=True" in text
    assert "TORCH_LOGS=output_code" in text
    assert "the rest of each call is host work the graph does not remove" not in text
    assert "parameters and buffers are treated as static" in text


def test_sync_debug_mode_is_called_experimental(lessons):
    text = _flat(lessons["23"].body)
    assert "prints a warning with a stack trace at every synchronizing call" not in text
    assert "experimental" in text


def test_the_step_timeline_memory_and_input_pipeline_are_taught(lessons):
    text = _flat(lessons["23"].body)
    assert "export_chrome_trace" in text and "profile_memory=True" in text
    assert "enumerate(DataLoader)" in text and "num_workers" in text


def test_tf32_is_switched_with_fp32_precision(lessons):
    """PyTorch 2.9 made fp32_precision the TF32 switch; allow_tf32 is to be deprecated and, in
    2.13, mixing the two raises. No lesson's code sets allow_tf32 any more."""
    for lesson in lessons.values():
        for line in _code(lesson).splitlines():
            code = line.split("#")[0]
            assert not re.search(r"allow_tf32\s*=", code), f"{lesson.source}: {line}"
    text = _all(lessons["24"])
    assert 'fp32_precision = "tf32"' in text and "conv.fp32_precision" in text


def test_tf32_error_sits_near_fp16_not_bf16(lessons):
    text = _quiz(lessons["24"])
    assert "near bf16's and fp16's" not in text
    assert "ten times below bf16's" in text


def test_reduced_precision_accumulation_is_named(lessons):
    text = _flat(lessons["24"].body)
    assert "accumulate in float32 (torch.sum does, and so do the tensor cores)" not in text
    assert "allow_fp16_reduced_precision_reduction" in text and "14 bits" in text
    assert "fused multiply-add" in text and "--fmad" in text
    assert "cudnn.benchmark = False" in text and "Batch invariance" in text


def test_no_absurd_distractors_come_back(lessons):
    """Choices no one who read the lesson would pick make a question a coin toss between the
    rest; these three were in the quizzes of lessons 22 and 23."""
    for key in ("22", "23"):
        choices = " ".join(c for q in lessons[key].quiz for c in q.choices).lower()
        assert "learning rate" not in choices, key
        assert "float64 so each kernel does more work" not in choices, key
        assert "profiler samples more often" not in choices, key


def test_the_datasheet_figure_is_both_directions_and_busbw_is_held_to_the_copy(lessons):
    """900 GB/s is NVLink 4's two directions added up; busbw is one way, below the peer copy a
    run measures, and NVLS can read above the one-way figure without breaking a ceiling."""
    text = _flat(lessons["25"].body)
    assert "18 x 25 x 2 = 900" in text and "450 GB/s" in text
    assert "not 900" in text and "judge it against your own peer copy" in text
    assert "354.9 GB/s" in text and "0.936" in text  # this project's 4x H200 run
    hit = next(s for s in _sentences(lessons["25"].body) if "NVLS all-reduce can show" in s)
    assert "above" in hit and "450" in hit


def test_the_ring_model_is_fitted_to_the_run_and_the_graph_removes_the_host(lessons):
    from gpulab.experiments import collective_latency, ring_model

    text = _flat(lessons["25"].body)
    assert "t(S, n) = 2(n-1) x alpha + 2(n-1)/n x S / B" in text
    assert "never to another card" in text
    assert "no host in the loop" in text and "there is no graph" in text
    # the lesson's numbers are the model's own
    model = ring_model.RingModel(10e-6, 355e9, "")
    half = 4 * model.alpha_s * model.bandwidth_bps  # where the two terms are equal
    assert model.time_s(half, 4) == pytest.approx(2 * 6 * model.alpha_s)
    assert f"about {half / 1e6:.0f} MB" in text
    assert f"{collective_latency.GRAPH_CALLS} all-reduces captured in one graph" in text
