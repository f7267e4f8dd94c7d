#!/usr/bin/env bash
# Everything one device call does, in one script (validate/NOTES.md lists each call):
#   bash validate/device/run_on_device.sh check|full|x8|shapes [ROUNDS]
# check: attention forward + backward against the references and short timings, the copy
#        bandwidths with the warm-up, one interleaved probe / nccl-tests round, a memcheck pass.
# full:  the 2-GPU validate run and nccl-tests (all six ops) in the same call, ROUNDS (default 4)
#        interleaved rounds of probe / nccl-tests at 256 MiB - 8 GiB, the 1-GPU validate run, and
#        PyTorch's matmul and SDPA forward / backward on GPU 0.
# x8:    (kind nvidia-h200-x8, issue 7) the 8-GPU validate run and nccl-tests -g 8 (all six
#        ops, 8 B - 8 GiB) in the same call, then ROUNDS (default 2) interleaved rounds at
#        256 MiB - 8 GiB on all 8 GPUs. About 7 min; afterwards, here without a GPU:
#        bash validate/device/after_x8.sh (calibrate, check, transfer error, verify).
# shapes: (1 GPU) GEMM over 8 shapes in 4 precisions with a 10 s burn, attention 4K - 256K, and
#        PyTorch's matmul over the same shapes and SDPA 4K - 256K: the data for GEMM efficiency
#        as a function of shape and for the attention term (calibrate --attention-reference).
# Needs, carried in .device/: clustersim-probe (built here: cmake --build ... --target
# clustersim-probe, copied to .device/) and nccl-tests/build/*_perf (built here, MPI=0, sm_90).
# Writes $OUT/console.log and $OUT/results.tar.gz.
set -u
mode=${1:-check}
rounds=${2:-$([ "$mode" = x8 ] && echo 2 || echo 4)}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
res=$OUT/res
mkdir -p "$res"
exec > >(tee "$OUT/console.log") 2>&1
step() { echo; echo "=== $(date +%T) $*"; }
here=$(cd "$(dirname "$0")" && pwd)

step "machine"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu \
  --format=csv
# NCCL from PyTorch's pip package; cuBLASLt and cudart (for nccl-tests) from /usr/local/cuda.
NCCL_LIB=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))")
export LD_LIBRARY_PATH=$NCCL_LIB:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
probe=.device/clustersim-probe
nt=.device/nccl-tests/build
chmod +x $probe $nt/*_perf 2>/dev/null

if [ "$mode" = check ]; then
  step "1 GPU: copies, attention forward + backward 4K/16K (checked against the references)"
  CUDA_VISIBLE_DEVICES=0 timeout 120 $probe --out "$res/check-1gpu.json" --skip collectives,gemm \
    --attention-seq 4K,16K --attention-time 0.2s > "$res/check-1gpu.txt" 2>&1
  echo "exit $?"; sed -n '/Copy bandwidth/,$p' "$res/check-1gpu.txt"
  step "one interleaved round, 256 MiB - 8 GiB, -n 20 -w 1 both"
  bash "$here/compare_rounds.sh" 1 "$res/rounds"
  step "1 GPU copies again, right after the collectives"
  CUDA_VISIBLE_DEVICES=0 timeout 60 $probe --out "$res/check-copies-after.json" \
    --skip collectives,gemm,attention > "$res/check-copies-after.txt" 2>&1
  echo "exit $?"; sed -n '/Copy bandwidth/,$p' "$res/check-copies-after.txt"
  step "compute-sanitizer memcheck: attention at 1K"
  CUDA_VISIBLE_DEVICES=0 timeout 90 compute-sanitizer --tool memcheck --print-limit 20 $probe \
    --out "$res/memcheck.json" --skip collectives,bandwidth,gemm --attention-seq 1K \
    --attention-time 0s > "$res/memcheck.txt" 2>&1
  echo "exit $?"; tail -n 25 "$res/memcheck.txt"
elif [ "$mode" = shapes ]; then
  shapes=512x512x512,1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,16384x16384x16384,4096x4096x16384,16384x4096x1024
  step "1 GPU: GEMM over shapes (4 precisions, 0.5 s each), burn 10 s, attention 4K - 256K"
  start=$(date +%s)
  CUDA_VISIBLE_DEVICES=0 timeout 300 $probe --out "$res/h200-1gpu-shapes.json" --skip collectives,bandwidth \
    --gemm-shapes $shapes --gemm-time 0.5s --burn 10s --attention-seq 4K,16K,64K,128K,256K \
    --attention-time 0.3s > "$res/probe-shapes.txt" 2>&1
  echo "exit $? after $(( $(date +%s) - start )) s"; sed -n '/GEMM/,$p' "$res/probe-shapes.txt"
  step "PyTorch: matmul over the same shapes, SDPA 4K - 256K"
  CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 timeout 200 python3 validate/device/torch_reference.py \
    "$res/torch-shapes.json" 4096,8192,16384,32768,65536,131072,262144 0.3 $shapes
  echo "exit $?"
elif [ "$mode" = x8 ]; then
  all8=0,1,2,3,4,5,6,7
  step "clustersim-probe on 8 GPUs (full; attention 4K-64K, burn 20 s)"
  rm -f /tmp/clustersim-nccl-debug.*.log
  start=$(date +%s)
  CUDA_VISIBLE_DEVICES=$all8 timeout 330 $probe --out "$res/h200-8gpu.json" --burn 20s \
    --attention-seq 4K,16K,64K > "$res/probe-8gpu.txt"
  echo "exit $? after $(( $(date +%s) - start )) s"; sed -n '/GEMM/,$p' "$res/probe-8gpu.txt"
  cp /tmp/clustersim-nccl-debug.*.log "$res/nccl-debug-info-8xh200.log" 2>/dev/null
  step "nccl-tests on 8 GPUs (-b 8 -e 8G -f 2 -g 8)"
  for op in all_reduce all_gather reduce_scatter alltoall broadcast sendrecv; do
    CUDA_VISIBLE_DEVICES=$all8 timeout 90 $nt/${op}_perf -b 8 -e 8G -f 2 -g 8 >> "$res/nccl-tests-8gpu.txt" 2>&1
    echo "$op exit $?"
  done
  step "$rounds interleaved rounds on 8 GPUs, 256 MiB - 8 GiB, -n 20 -w 1 both"
  GPUS=8 bash "$here/compare_rounds.sh" "$rounds" "$res/rounds"
else
  step "clustersim-probe on 2 GPUs (full)"
  rm -f /tmp/clustersim-nccl-debug.*.log
  start=$(date +%s)
  CUDA_VISIBLE_DEVICES=0,1 timeout 290 $probe --out "$res/h200-2gpu.json" > "$res/probe-2gpu.txt"
  echo "exit $? after $(( $(date +%s) - start )) s"; sed -n '/GEMM/,$p' "$res/probe-2gpu.txt"
  cp /tmp/clustersim-nccl-debug.*.log "$res/nccl-debug-info-2xh200.log" 2>/dev/null

  step "nccl-tests on 2 GPUs (-b 8 -e 8G -f 2 -g 2)"
  for op in all_reduce all_gather reduce_scatter alltoall broadcast sendrecv; do
    CUDA_VISIBLE_DEVICES=0,1 timeout 120 $nt/${op}_perf -b 8 -e 8G -f 2 -g 2 >> "$res/nccl-tests-2gpu.txt" 2>&1
    echo "$op exit $?"
  done

  step "$rounds interleaved rounds, 256 MiB - 8 GiB, -n 20 -w 1 both"
  bash "$here/compare_rounds.sh" "$rounds" "$res/rounds"

  step "clustersim-probe on 1 GPU (after the runs above)"
  CUDA_VISIBLE_DEVICES=0 timeout 200 $probe --out "$res/h200-1gpu.json" --burn 10s > "$res/probe-1gpu.txt"
  echo "exit $?"; sed -n '/Copy bandwidth/,$p' "$res/probe-1gpu.txt"

  step "PyTorch reference (matmul loop, SDPA forward and backward) on GPU 0"
  CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 timeout 150 python3 validate/device/torch_reference.py \
    "$res/torch-sdpa-matmul-h200.json" 4096,8192,16384,32768,65536,131072 0.3
  echo "exit $?"
fi

step "done"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
tar -C "$res" -czf "$OUT/results.tar.gz" . && ls -la "$res" && du -sh "$OUT/results.tar.gz"
