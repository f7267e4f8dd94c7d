#!/usr/bin/env bash
# CLI tests of `clustersim validate` without a GPU: the fake backend's full run, the watchdog,
# an interrupted run's partial file, MPI plumbing under mpirun, and the no-GPU-support message.
# Usage: bash validate_cli.sh <clustersim binary> <source dir>
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {  # check "what" command...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}

# 1. A fake 2-GPU run completes, exit 0, with a complete file and no partial left.
"$bin" validate --backend fake --fake gpus=2 -e 1M --burn 0s --out "$tmp/full.json" \
  >"$tmp/full.out" 2>"$tmp/full.err"
check "fake run exits 0" test $? -eq 0
check "final file is complete" grep -q '"complete": true' "$tmp/full.json"
check "schema is versioned" grep -q '"schema": "clustersim.measurements/1"' "$tmp/full.json"
check "no partial file left" test ! -e "$tmp/full.json.partial"
check "table shows nccl-tests columns" grep -q 'busbw' "$tmp/full.out"
check "progress lines on stderr" grep -q '^\[validate\] all_reduce 1 MiB' "$tmp/full.err"
check "attention has forward and backward rows" \
  grep -q '"direction": "backward"' "$tmp/full.json"
check "the FLOP convention of each attention row is recorded" \
  grep -q '"flops_convention": "2.5x forward"' "$tmp/full.json"

# 2. A hung collective: the watchdog names it, the run exits 1 and still writes the file.
"$bin" validate --backend fake --fake gpus=2,hang_op=reduce_scatter,hang_size=65536 \
  --timeout 100ms -e 1M --burn 0s --skip attention --out "$tmp/hang.json" >"$tmp/hang.out" 2>&1
check "hung run exits 1" test $? -eq 1
check "error names collective and size" \
  grep -q 'reduce_scatter 64 KiB out-of-place: did not finish within 100 ms' "$tmp/hang.out"
check "hung run's file is complete with the error" grep -q '"section": "collectives"' "$tmp/hang.json"

# 3. Interrupted half-way (SIGINT): a valid partial file with the rows done so far.
timeout -s INT 1.5 "$bin" validate --backend fake --fake sleep=0.02 -e 1M --burn 0s \
  --out "$tmp/cut.json" >/dev/null 2>&1
check "interrupted run was stopped by the signal" test $? -eq 124
check "no final file after interruption" test ! -e "$tmp/cut.json"
check "partial file says incomplete" grep -q '"complete": false' "$tmp/cut.json.partial"
check "partial file holds finished rows" grep -q '"op": "all_reduce"' "$tmp/cut.json.partial"
if command -v python3 >/dev/null; then
  check "partial file is valid JSON" python3 -c "import json,sys; json.load(open(sys.argv[1]))" \
    "$tmp/cut.json.partial"
fi

# 4. Bad input exits 2 naming the flag.
"$bin" validate --backend fake --ops all_reduce,allreduce_fast >/dev/null 2>"$tmp/bad.err"
check "unknown collective exits 2" test $? -eq 2
check "message names the flag" grep -q -- "--ops: unknown collective 'allreduce_fast'" "$tmp/bad.err"

# 5. The CUDA backend: without GPU support built it says so plainly; built but without a GPU
#    or driver here, it fails with exit 2 and a message naming what is missing.
"$bin" validate --out "$tmp/gpu.json" >"$tmp/gpu.out" 2>&1
rc=$?
if [ $rc -eq 2 ]; then echo "ok: cuda backend without a GPU exits 2: $(head -c 200 "$tmp/gpu.out")"
else echo "FAIL: cuda backend without GPU exits $rc"; fails=$((fails + 1)); fi

# 6. Two MPI ranks with the fake backend: rank 0 gathers both.
if command -v mpirun >/dev/null && "$bin" validate --help | grep -q -- '--backend'; then
  # (Under AddressSanitizer, LeakSanitizer would fail the ranks' exit on Open MPI's own
  # allocations, in components it loads and unloads: leak checking off for this run only.)
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$bin" validate --backend fake \
    -e 64K --burn 0s --skip attention -q --out "$tmp/mpi.json" >"$tmp/mpi.out" 2>&1
  rc=$?
  if grep -q "no MPI support" "$tmp/mpi.out"; then
    echo "skip: this build has no MPI"
  else
    check "mpirun -np 2 exits 0" test $rc -eq 0
    check "mpi mode recorded" grep -q '"mode": "mpi"' "$tmp/mpi.json"
    check "two ranks in the communicator" grep -q '"world_size": 2' "$tmp/mpi.json"
    check "gpus of both ranks gathered" test "$(grep -c '"uuid"' "$tmp/mpi.json")" -eq 2
  fi
fi

# 7. The standalone prober (built next to clustersim when CUDA is found) needs only C-library
#    class shared objects: NCCL, cuBLASLt and NVML are loaded at run time, the rest is static.
probe=$(dirname "$bin")/../validate/gpu/clustersim-probe
if [ -x "$probe" ] && command -v readelf >/dev/null; then
  needed=$(readelf -d "$probe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  # (a sanitizer build adds its runtimes)
  extra=$(echo "$needed" | tr ' ' '\n' | grep -v -E '^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|ld-linux-aarch64|libasan|libubsan|liblsan)\.so' | grep -v '^$')
  check "clustersim-probe needs only libc-class libraries (has: $needed)" test -z "$extra"
  "$probe" --backend fake -e 64K --burn 0s --skip attention -q --out "$tmp/probe.json" >/dev/null
  check "clustersim-probe runs the validate code (fake backend)" grep -q '"complete": true' "$tmp/probe.json"
fi

echo "$fails failed"
[ $fails -eq 0 ]
