#!/usr/bin/env bash
# The multi-GPU runs of issue 36 (and what else a device call has room for), each part under its
# own time limit so one call (600 s) reports every part it reached.
# Usage: OUT=dir bash bench/gpu_multi.sh PART ...
# Parts: dsum (deterministic-sum's catalog and bench on GPU 0), prof (where deterministic-sum's repeat check spends its time, on GPU 0), topology (the
# topology view and link figures against nvidia-smi, screenshots), tests (the multi-GPU tests and
# the collective exercises' catalog on NCCL), expert (our ring against NCCL at 256 MiB and 1 GiB),
# bench (the collective exercises through `gpulab bench --suite exercises`), multibench (the
# multi-GPU experiments through `gpulab bench --suite multi-gpu`).
set -u
out=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # the host's rule
PT="python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts= -rfE --timeout 180"
COLL="ring-allreduce,reduce-scatter-all-gather,ddp-overlap"
for part in "$@"; do
  case $part in
    prof)
      CUDA_VISIBLE_DEVICES=0 timeout -s INT 150 python3 bench/profile_check.py deterministic-sum 45 \
        > "$out/prof.log" 2>&1 ;;
    dsum)
      CUDA_VISIBLE_DEVICES=0 timeout -s INT 200 ${PT/-m gpu /} tests/exercises/test_exercises_catalog.py -k "deterministic-sum" \
        > "$out/dsum.log" 2>&1
      CUDA_VISIBLE_DEVICES=0 timeout -s INT 120 python3 -m gpulab bench --suite exercises --repeat 2 \
        --exercise deterministic-sum --json "$out/dsum-bench.json" --markdown "$out/dsum-bench.md" \
        > "$out/dsum-bench.log" 2>&1 ;;
    topology)
      timeout -s INT 200 python3 bench/topology_gpu_check.py "$out" > "$out/topology.log" 2>&1 ;;
    tests)
      timeout -s INT 200 $PT tests/test_exp_multi.py tests/test_quiz_probes_gpu.py tests/test_telemetry_gpu.py \
        -k "not atomic-order and not chain-headroom and not copy-vs-compute and not launch-cost and not row-loop and not softmax-fusion and not sum-vs-copy" \
        > "$out/tests.log" 2>&1
      # the catalog's collective files carry no gpu mark: they run on NCCL wherever 2+ GPUs are
      timeout -s INT 300 ${PT/-m gpu /} tests/exercises/test_exercises_catalog.py \
        -k "ring-allreduce or reduce-scatter or ddp-overlap" > "$out/tests-catalog.log" 2>&1
      echo "== tests-catalog: $(tail -1 "$out/tests-catalog.log")" ;;
    expert)
      timeout -s INT 200 python3 bench/collective_expert.py "$out/collective-expert.json" 256 1024 \
        > "$out/expert.log" 2>&1 ;;
    sweep)
      # the expert's pieces a chunk, at 1 GiB on 2 ranks
      for p in 1 2 4 8 16; do
        RING_PIECES=$p timeout -s INT 90 python3 bench/collective_expert.py "$out/sweep-$p.json" 1024 2>&1 | tail -1
      done > "$out/sweep.log" 2>&1 ;;
    bench)
      timeout -s INT 400 python3 -m gpulab bench --suite exercises --repeat 2 --exercise "$COLL" \
        --json "$out/collectives-bench.json" --markdown "$out/collectives-bench.md" \
        > "$out/bench.log" 2>&1 ;;
    multibench)
      timeout -s INT 300 python3 -m gpulab bench --suite multi-gpu \
        --json "$out/multi-gpu.json" --markdown "$out/multi-gpu.md" > "$out/multibench.log" 2>&1 ;;
    *) echo "unknown part: $part" >&2; exit 2 ;;
  esac
  echo "== $part (rc $?): $(grep -E '(passed|failed|error|of NCCL)' "$out/$part.log" 2>/dev/null | tail -2)"
done
