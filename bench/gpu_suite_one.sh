#!/usr/bin/env bash
# The whole `pytest -m gpu` as one run, over the GPUs in GPUS (default: all), each test under its
# own timeout so a hung test fails alone. Three phases, run in the order 1, 3, 2 (the longest last):
#   1. the GPU tests not marked `alone`, in WORKERS pytest-xdist workers a GPU sharing it,
#      work-stealing (most of the suite is compiling, process starts and small kernels; their
#      grades are ratios against a yardstick timed in the same rounds);
#   2. the tests marked `alone` (they time against a fixed figure or the learner's own timer,
#      hold the GPU's memory or its counters: see pyproject's markers), one worker a GPU;
#   3. the tests marked `host` (they time copies between host and GPU: a test on another GPU
#      of the host moves their figures), then MULTI, the files that read every GPU (the
#      multi-GPU experiments, doctor, the runner's process list, telemetry): one process with
#      all of GPUS visible, nothing else running.
# Workers are put on their GPU by tests/conftest.py (GPULAB_TEST_GPUS). Needs pytest-xdist and
# pytest-timeout. Writes $OUT/phase1.log, phase2.log, phase3a.log, phase3.log and a summary on
# stdout.
# Usage: GPUS=0,1 WORKERS=6 bash bench/gpu_suite_one.sh [SECONDS_PER_TEST]
# On one H200 (a063866's tree, before the marks) phase 1 took 611 s with 6 workers, and the
# tests now marked `alone` about 17 minutes in one process. On two H200s of one host (b5f15ee,
# before `host`): phase 1 164 s in 12 workers, phase 2 799 s in 2, phase 3 51 s.
# At c76b98e (993 tests, two H200s): phase 1 139 s, 3a 122 s, 3 51 s, 2 863 s; 20 minutes in all
# with the install, so it needs three device calls back to back and two thirds of a session's time.
set -u
per=${1:-240}
out=${OUT:-/tmp}
workers=${WORKERS:-6}
gpus=${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)}
n=$(awk -F, '{print NF}' <<< "$gpus")
multi="tests/test_exp_multi.py tests/test_doctor.py tests/test_runner_gpu.py tests/test_telemetry_gpu.py"
ignore=""
for f in $multi; do ignore="$ignore --ignore=$f"; done
PT="python3 -m pytest -p no:cacheprovider -o addopts= -rfE --timeout $per --durations=30"
phase() {  # name, then pytest's arguments
  local name=$1 start
  shift
  start=$(date +%s)
  "$@" > "$out/$name.log" 2>&1
  echo "exit=$? after $(( $(date +%s) - start )) s" >> "$out/$name.log"
}
export GPULAB_TEST_GPUS=$gpus
# The long phase last: a run its device time cuts short (at b3189f9 the last tests of the
# multi-GPU files were cut, after 14 minutes of phase 2) still has the short phases whole
phase phase1 $PT -q -n $(( workers * n )) --dist worksteal -m "gpu and not alone" $ignore tests
unset GPULAB_TEST_GPUS
CUDA_VISIBLE_DEVICES=${gpus%%,*} phase phase3a $PT -v -m "gpu and host" $ignore tests
CUDA_VISIBLE_DEVICES=$gpus phase phase3 $PT -v -m gpu $(ls $multi 2>/dev/null)
export GPULAB_TEST_GPUS=$gpus
phase phase2 $PT -v -n "$n" --dist worksteal -m "gpu and alone and not host" $ignore tests
for f in "$out"/phase1.log "$out"/phase3a.log "$out"/phase3.log "$out"/phase2.log; do
  echo "== $(basename "$f"): $(grep -E '(passed|failed|error)' "$f" | tail -1) $(tail -1 "$f")"
  grep -E '^(FAILED|ERROR)' "$f"
done
