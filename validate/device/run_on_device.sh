#!/usr/bin/env bash
# Everything one device call does, in one script (validate/NOTES.md lists each call):
#   bash validate/device/run_on_device.sh smoke|full
# Needs, carried in .device/: clustersim-probe (built here: cmake --build ... --target
# clustersim-probe, copied to .device/) and nccl-tests/build/*_perf (built here, MPI=0, sm_90).
# Writes $OUT/console.log and $OUT/results.tar.gz (measurement files, nccl-tests outputs, the
# NCCL_DEBUG=INFO log, the interrupted run's partial file, PyTorch reference numbers).
set -u
mode=${1:-smoke}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
res=$OUT/res
mkdir -p "$res"
exec > >(tee "$OUT/console.log") 2>&1
step() { echo; echo "=== $(date +%T) $*"; }

step "machine"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,clocks.max.sm,memory.total \
  --format=csv
nvidia-smi topo -m
# NCCL from PyTorch's pip package; cuBLASLt and cudart (for nccl-tests) from /usr/local/cuda.
NCCL_LIB=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))")
export LD_LIBRARY_PATH=$NCCL_LIB:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; ls "$NCCL_LIB"
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.device_count(), 'GPUs, nccl', torch.cuda.nccl.version())"
probe=.device/clustersim-probe
nt=.device/nccl-tests/build
chmod +x $probe $nt/*_perf 2>/dev/null
if ! $nt/all_reduce_perf -b 8 -e 8 -g 1 -n 1 -w 0 >/dev/null 2>&1; then
  step "prebuilt nccl-tests do not run here; building them"
  (cd .device/nccl-tests && make -j16 MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME="$(dirname "$NCCL_LIB")" \
     NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" src.build >/dev/null 2>&1) || echo "nccl-tests build failed"
fi

if [ "$mode" = smoke ]; then
  sweep=(-e 256M) burn=5s seqs=4K,16K,64K att_t=0.2s nt_e=256M ops="all_reduce all_gather reduce_scatter"
else
  sweep=() burn=30s seqs=4K,8K,16K,32K,64K,128K att_t=0.5s nt_e=8G
  ops="all_reduce all_gather reduce_scatter alltoall broadcast sendrecv"
fi

step "clustersim-probe on 2 GPUs ($mode)"
rm -f /tmp/clustersim-nccl-debug.*.log
start=$(date +%s)
CUDA_VISIBLE_DEVICES=0,1 timeout 290 $probe --out "$res/h200-2gpu.json" "${sweep[@]}" \
  --burn $burn --attention-seq $seqs --attention-time $att_t > "$res/probe-2gpu.txt"
echo "exit $? after $(( $(date +%s) - start )) s"; tail -n 80 "$res/probe-2gpu.txt"
cp /tmp/clustersim-nccl-debug.*.log "$res/nccl-debug-info-2xh200.log" 2>/dev/null

step "nccl-tests on 2 GPUs (-b 8 -e $nt_e -f 2 -g 2)"
for op in $ops; do
  CUDA_VISIBLE_DEVICES=0,1 timeout 120 $nt/${op}_perf -b 8 -e $nt_e -f 2 -g 2 >> "$res/nccl-tests-2gpu.txt" 2>&1
  echo "$op exit $?"
done
grep -E "^ +(268435456|1073741824|8589934592) " "$res/nccl-tests-2gpu.txt"

if [ "$mode" = full ]; then
  step "second pass, 256 MiB - 8 GiB, 50 timed launches: clustersim-probe, then nccl-tests"
  CUDA_VISIBLE_DEVICES=0,1 timeout 150 $probe --out "$res/h200-2gpu-iters50.json" \
    --ops all_reduce,all_gather,reduce_scatter -b 256M -e 8G --iters 50 --warmup 5 \
    --skip bandwidth,gemm,attention > "$res/probe-2gpu-iters50.txt"
  echo "exit $?"
  for op in all_reduce all_gather reduce_scatter; do
    CUDA_VISIBLE_DEVICES=0,1 timeout 90 $nt/${op}_perf -b 256M -e 8G -f 2 -g 2 -n 50 -w 5 \
      >> "$res/nccl-tests-2gpu-iters50.txt" 2>&1
    echo "$op exit $?"
  done
fi

step "clustersim-probe on 1 GPU"
CUDA_VISIBLE_DEVICES=0 timeout 200 $probe --out "$res/h200-1gpu.json" "${sweep[@]}" --burn 10s \
  --attention-seq $seqs --attention-time $att_t > "$res/probe-1gpu.txt"
echo "exit $?"; tail -n 30 "$res/probe-1gpu.txt"

step "nccl-tests on 1 GPU"
for op in all_reduce all_gather reduce_scatter; do
  CUDA_VISIBLE_DEVICES=0 timeout 60 $nt/${op}_perf -b 8 -e $nt_e -f 2 -g 1 >> "$res/nccl-tests-1gpu.txt" 2>&1
  echo "$op exit $?"
done

step "interrupted run: SIGINT after 20 s leaves a valid partial file"
CUDA_VISIBLE_DEVICES=0,1 timeout -s INT 20 $probe --out "$res/interrupted.json" --burn 5s > /dev/null 2>&1
echo "exit $? (124: stopped by timeout)"; ls -la "$res"/interrupted.json* 2>&1
python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print('partial file valid JSON: complete =', m['complete'], ', rows =', len(m['collectives']), ', sections done =', m['sections_done'])" "$res/interrupted.json.partial"

step "PyTorch reference (matmul loop, SDPA) on GPU 0"
CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 timeout 150 python3 validate/device/torch_reference.py \
  "$res/torch-reference.json" "$(echo $seqs | sed 's/K/*1024/g' | python3 -c 'import sys; print(",".join(str(eval(x)) for x in sys.stdin.read().strip().split(",")))')" 0.3
echo "exit $?"

step "done"
tar -C "$res" -czf "$OUT/results.tar.gz" . && ls -la "$res" && du -sh "$OUT/results.tar.gz"
