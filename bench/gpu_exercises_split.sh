#!/usr/bin/env bash
# `gpulab bench --suite exercises` split over the GPUs of one machine, so the whole catalog
# (references and experts REPEAT times, every wrong/ and right/, then a soak of SOAK checks of
# every exercise's reference with a core kept busy) takes a fraction of the time one process
# would. Each group runs in its own process with one GPU visible; a GPU's groups run one after
# another, never side by side (two checks sharing a GPU time each other). Last, the collective
# exercises, in one process with every GPU visible (their ranks take one GPU each).
# Usage (device machine, project root, wheels on PYTHONPATH): bash bench/gpu_exercises_split.sh
#   [REPEAT [SOAK]]   (default 5 50). Writes $OUT/ex-N.json, ex-N.md, ex-N.log per group,
#   ex-ranked.* for the collectives, and a summary in $OUT/ex.log.
# GROUPS_FILE (a file of comma-separated exercise ids, one group a line) and GPUS (which GPUs)
# choose another split; HOST (default bandwidth,streams-overlap) runs alone after them; SOAK_ONLY=1 runs the soak alone (`--soak-only`: no wrong/, right/ or
# repeat checks) and no collectives.
set -u
repeat=${1:-5}
soak=${2:-50}
out=${OUT:-/tmp}
if [ -n "${GROUPS_FILE:-}" ]; then mapfile -t groups < "$GROUPS_FILE"; else groups=(
  "mixed-precision,profile-step,vector-add,model-to-device,conv2d,zip-add,grid-stride,transpose-tiled,reduction-kernel"
  "honest-timing,histogram,memory-tracker,cuda-graphs,guards,stencil-shared,softmax-rows,warp-argmax"
  "triton-matmul,matmul-tiled,first-kernel,deterministic-sum,map-2d,dot-reduction,conv1d,triton-affine-clamp"
  "compile-fused,tree-reduction,device-agnostic,grid-2d,map-add-ten,broadcast-outer,scan,elementwise-fused,triton-causal-softmax"
); fi
# The exercises whose rules time host-to-device copies run last, alone on the machine: another
# GPU's copies share the host's memory and links (at 2ae75d8 streams-overlap's repeat check took
# 10 s beside another group, its certified timing buying rounds, against 0.7 s alone)
host=${HOST-bandwidth,streams-overlap}
ranked=${RANKED-ring-allreduce,reduce-scatter-all-gather,ddp,ddp-overlap}
only=()
if [ -n "${SOAK_ONLY:-}" ]; then only=(--soak-only); ranked=""; fi
IFS=, read -r -a gpus <<< "${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)}"
one() {  # group index, GPU
  CUDA_VISIBLE_DEVICES=$2 GPULAB_DATA_DIR=/tmp/gpulab-bench-$1 python3 -m gpulab bench \
    --suite exercises --repeat "$repeat" --soak "$soak" "${only[@]}" --exercise "${groups[$1]}" \
    --json "$out/ex-$1.json" --markdown "$out/ex-$1.md" > "$out/ex-$1.log" 2>&1
  echo "exit=$?" >> "$out/ex-$1.log"
}
start=$(date +%s)
for ((g = 0; g < ${#gpus[@]}; g++)); do
  ( for ((i = g; i < ${#groups[@]}; i += ${#gpus[@]})); do one "$i" "${gpus[$g]}"; done ) &
done
wait
if [ -n "$host" ]; then
  groups+=("$host")
  one $(( ${#groups[@]} - 1 )) "${gpus[0]}"
fi
echo "groups done after $(( $(date +%s) - start )) s" > "$out/ex.log"
if [ -n "$ranked" ]; then
  CUDA_VISIBLE_DEVICES=${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)} \
    GPULAB_DATA_DIR=/tmp/gpulab-bench-ranked python3 -m gpulab bench --suite exercises \
    --repeat "$repeat" --exercise "$ranked" --json "$out/ex-ranked.json" \
    --markdown "$out/ex-ranked.md" > "$out/ex-ranked.log" 2>&1
  echo "exit=$?" >> "$out/ex-ranked.log"
fi
echo "all done after $(( $(date +%s) - start )) s" >> "$out/ex.log"
for f in "$out"/ex-*.log; do
  echo "== $f"; grep -E "^  (pass|miss|FAILED)|exit=" "$f"
done >> "$out/ex.log"
