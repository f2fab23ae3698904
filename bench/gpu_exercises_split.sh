#!/usr/bin/env bash
# `gpulab bench --suite exercises` split over the GPUs of one machine, one process per GPU, so
# the whole catalog (references and experts --repeat times, every wrong/ and right/, then a soak
# of --soak checks of every GPU exercise's reference with a core kept busy) fits one device call.
# Usage (device machine, project root, wheels on PYTHONPATH): bash bench/gpu_exercises_split.sh
#   REPEAT SOAK   (default 5 50). Writes $OUT/ex-N.json and ex-N.md per GPU and $OUT/ex.log.
set -u
repeat=${1:-5}
soak=${2:-50}
out=${OUT:-/tmp}
# GROUPS (a file of comma-separated exercise ids, one group a line) and GPUS (which GPUs, in
# order) choose another split
if [ -n "${GROUPS_FILE:-}" ]; then mapfile -t groups < "$GROUPS_FILE"; else groups=(
  "mixed-precision,profile-step,vector-add,model-to-device,conv2d,zip-add,grid-stride,transpose-tiled,reduction-kernel"
  "ddp,honest-timing,histogram,memory-tracker,cuda-graphs,guards,stencil-shared,softmax-rows,warp-argmax"
  "triton-matmul,streams-overlap,matmul-tiled,first-kernel,deterministic-sum,map-2d,dot-reduction,conv1d,triton-affine-clamp"
  "bandwidth,compile-fused,tree-reduction,device-agnostic,grid-2d,map-add-ten,broadcast-outer,scan,elementwise-fused,triton-causal-softmax"
); fi
IFS=, read -r -a gpus <<< "${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)}"
for ((i = 0; i < ${#groups[@]}; i++)); do
  gpu=${gpus[$((i % ${#gpus[@]}))]}
  ( CUDA_VISIBLE_DEVICES=$gpu GPULAB_DATA_DIR=/tmp/gpulab-bench-$i python3 -m gpulab bench \
      --suite exercises --repeat "$repeat" --soak "$soak" --exercise "${groups[$i]}" \
      --json "$out/ex-$i.json" --markdown "$out/ex-$i.md" > "$out/ex-$i.log" 2>&1
    echo "exit=$?" >> "$out/ex-$i.log" ) &
done
wait
for ((i = 0; i < ${#groups[@]}; i++)); do
  echo "== group $i"; grep -E "^  (pass|miss|FAILED)|exit=" "$out/ex-$i.log"
done | tee "$out/ex.log"
