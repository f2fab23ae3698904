#!/usr/bin/env bash
# The whole `pytest -m gpu` on one GPU as one run, for the 1-GPU kind, where the suite run file
# by file takes longer than a session's device time. Two phases, each test under its own
# timeout, so a hung test fails alone:
#   1. every file but ALONE, in WORKERS pytest-xdist workers sharing the GPU, work-stealing
#      (most of the suite is compiling, process starts and small kernels: the GPU sits idle
#      between them, and the grades are ratios against a yardstick timed in the same rounds);
#   2. ALONE, one process: the files that read the whole GPU (its memory, NVML's process list,
#      every GPU's view) or time against a fixed figure rather than a peer in the same rounds.
# Needs pytest-xdist and pytest-timeout. Writes $OUT/phase1.log, $OUT/phase2.log and a summary
# on stdout. Usage: WORKERS=6 bash bench/gpu_suite_one.sh [SECONDS_PER_TEST]
set -u
per=${1:-240}
out=${OUT:-/tmp}
workers=${WORKERS:-6}
alone="tests/test_exp_multi.py tests/test_doctor.py tests/test_runner_gpu.py
  tests/test_telemetry_gpu.py tests/test_exp_gpu.py tests/test_montecarlo.py
  tests/test_honest_numbers.py tests/test_peaks.py tests/test_ladder_gpu.py
  tests/test_exp_claims_gpu.py tests/test_results_timing.py tests/test_bench.py"
PT="python3 -m pytest -m gpu -p no:cacheprovider -o addopts= -rfE --timeout $per --durations=30"
ignore=""
for f in $alone; do ignore="$ignore --ignore=$f"; done
start=$(date +%s)
$PT -q -n "$workers" --dist worksteal $ignore tests > "$out/phase1.log" 2>&1
echo "exit=$? after $(( $(date +%s) - start )) s" >> "$out/phase1.log"
start=$(date +%s)
$PT -v $(ls $alone 2>/dev/null) > "$out/phase2.log" 2>&1
echo "exit=$? after $(( $(date +%s) - start )) s" >> "$out/phase2.log"
for f in "$out"/phase1.log "$out"/phase2.log; do
  echo "== $(basename "$f"): $(grep -E '(passed|failed|error)' "$f" | tail -1) $(tail -1 "$f")"
  grep -E '^(FAILED|ERROR)' "$f"
done
