#!/usr/bin/env bash
# Repeated, interleaved comparison of clustersim-probe and nccl-tests on 2 GPUs at 256 MiB - 8 GiB
# (all_reduce, all_gather, reduce_scatter; default 2 warm-up + 20 timed launches vs nccl-tests'
# defaults): ROUNDS rounds of (probe, then nccl-tests), so that run-to-run spread of both tools
# can be told from a difference between them. Writes $OUT/rounds.tar.gz and $OUT/console.log.
#   bash validate/device/compare_rounds.sh [ROUNDS]
set -u
rounds=${1:-4}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
res=$OUT/rounds
mkdir -p "$res"
exec > >(tee "$OUT/console.log") 2>&1
NCCL_LIB=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))")
export LD_LIBRARY_PATH=$NCCL_LIB:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
probe=.device/clustersim-probe
nt=.device/nccl-tests/build
chmod +x $probe $nt/*_perf
export CUDA_VISIBLE_DEVICES=0,1
for r in $(seq 1 "$rounds"); do
  echo "=== round $r $(date +%T)"
  timeout 100 $probe --out "$res/probe-round$r.json" --ops all_reduce,all_gather,reduce_scatter \
    -b 256M -e 8G --skip bandwidth,gemm,attention -q > /dev/null
  echo "probe exit $?"
  for op in all_reduce all_gather reduce_scatter; do
    timeout 60 $nt/${op}_perf -b 256M -e 8G -f 2 -g 2 >> "$res/nccl-tests-round$r.txt" 2>&1
    echo "$op exit $?"
  done
done
tar -C "$res" -czf "$OUT/rounds.tar.gz" . && ls -la "$res"
