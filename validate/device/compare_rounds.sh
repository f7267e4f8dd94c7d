#!/usr/bin/env bash
# Repeated, interleaved comparison of clustersim-probe and nccl-tests on 2 GPUs at 256 MiB - 8 GiB
# (all_reduce, all_gather, reduce_scatter), both with 1 warm-up and 20 timed launches (the probe's
# --warmup 1 --iters 20, nccl-tests' defaults -w 1 -n 20, named explicitly): ROUNDS rounds of
# (probe, then nccl-tests), so that run-to-run spread of both tools can be told from a difference
# between them. Then prints the medians and min..max per cell (validate/device/rounds_table.py).
#   bash validate/device/compare_rounds.sh ROUNDS DIR
# Expects NCCL on LD_LIBRARY_PATH and NCCL_NVLS_ENABLE=0 exported (run_on_device.sh does both).
# GPUS=8 in the environment runs them on 8 GPUs instead (the x8 call of issue 7).
set -u
gpus=${GPUS:-2}
rounds=${1:-4}
res=${2:-$OUT/rounds}
mkdir -p "$res"
: "${NCCL_NVLS_ENABLE:?export NCCL_NVLS_ENABLE=0 first}"
probe=.device/clustersim-probe
nt=.device/nccl-tests/build
export CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((gpus - 1)))
for r in $(seq 1 "$rounds"); do
  echo "=== round $r $(date +%T)"
  timeout 100 $probe --out "$res/probe-round$r.json" --ops all_reduce,all_gather,reduce_scatter \
    -b 256M -e 8G --warmup 1 --iters 20 --skip bandwidth,gemm,attention -q > /dev/null
  echo "probe exit $?"
  for op in all_reduce all_gather reduce_scatter; do
    timeout 60 $nt/${op}_perf -b 256M -e 8G -f 2 -g "$gpus" -w 1 -n 20 >> "$res/nccl-tests-round$r.txt" 2>&1
    echo "$op exit $?"
  done
done
python3 "$(dirname "$0")/rounds_table.py" "$res" "$rounds"
