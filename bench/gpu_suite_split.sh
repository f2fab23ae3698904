#!/usr/bin/env bash
# `pytest -m gpu` split over the GPUs named in GPUS (default: all), one process per GPU, each
# test under its own timeout, so the whole GPU suite fits one device call and a hung test fails
# alone. Files that read every GPU (multi-GPU, doctor, the runner's process list, telemetry) run
# last with all of GPUS visible. Usage: GPUS=0,1,2 bash bench/gpu_suite_split.sh [SECONDS]
# GPUS may name one GPU more than once (GPUS=0,0,0,0: four processes share one GPU). SKIP names
# files left to a call of their own (timing that must run alone, such as the ladders).
# Writes $OUT/suite-N.log per GPU, $OUT/suite-all.log and a summary on stdout.
set -u
per=${1:-200}
out=${OUT:-/tmp}
IFS=, read -r -a gpus <<< "${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)}"
n=${#gpus[@]}
multi="tests/test_exp_multi.py tests/test_doctor.py tests/test_runner_gpu.py tests/test_telemetry_gpu.py"
files=$(ls -S tests/test_*.py tests/*/test_*.py 2>/dev/null)
for f in $multi ${SKIP:-}; do files=$(printf '%s\n' $files | grep -v -F -x "$f"); done
declare -a bucket size
for ((i = 0; i < n; i++)); do bucket[$i]=""; size[$i]=0; done
first=0
catalog=$(printf '%s\n' $files | grep -m1 "test_exercises_catalog.py")
if [ "$n" -ge 3 ] && [ -n "$catalog" ]; then
  bucket[0]="$catalog"; size[0]=999999999; first=1
  files=$(printf '%s\n' $files | grep -v -F -x "$catalog")
fi
for f in $files; do
  best=$first
  for ((i = first; i < n; i++)); do [ "${size[$i]}" -lt "${size[$best]}" ] && best=$i; done
  bucket[$best]="${bucket[$best]} $f"; size[$best]=$(( size[$best] + $(wc -c < "$f") ))
done
PT="python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts= -rfE --timeout $per"
for ((i = 0; i < n; i++)); do
  ( CUDA_VISIBLE_DEVICES=${gpus[$i]} GPULAB_DATA_DIR=/tmp/suite-data-$i $PT ${bucket[$i]} \
      > "$out/suite-$i.log" 2>&1; echo "exit=$?" >> "$out/suite-$i.log" ) &
done
wait
all=$(printf '%s\n' "${gpus[@]}" | sort -un | paste -sd,)
CUDA_VISIBLE_DEVICES=$all GPULAB_DATA_DIR=/tmp/suite-data-all $PT $(ls $multi 2>/dev/null) \
  > "$out/suite-all.log" 2>&1; echo "exit=$?" >> "$out/suite-all.log"
for f in "$out"/suite-*.log; do
  echo "== $(basename "$f"): $(grep -E '(passed|failed|error)' "$f" | tail -1)"
  grep -E '^(FAILED|ERROR)' "$f"
done
