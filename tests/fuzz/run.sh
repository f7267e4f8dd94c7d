#!/usr/bin/env bash
# Runs every libFuzzer target of a CLUSTERSIM_FUZZ build: first over its committed corpus
# (tests/fuzz/corpus/<target>/, the regression inputs: each must pass), then SECONDS of fuzzing
# from that corpus, two targets at a time. New inputs go to a scratch copy, never into the
# repository. Any crash, leak, UB report, input slower than 1 s or uncaught exception fails the
# run, and its input is kept in OUT (default: build-fuzz/fuzz-artifacts/).
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS=20] [OUT]
set -euo pipefail
build=${1:?usage: tests/fuzz/run.sh BUILD_DIR [SECONDS] [OUT]}
seconds=${2:-20}
out=${3:-$build/fuzz-artifacts}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
targets=(scenario calibration claims measurement nccl_tests nccl_log units report)

run_one() {
  local t=$1 bin="$build/tests/fuzz/fuzz_$1" scratch="$out/corpus-$1"
  rm -rf "$scratch" && mkdir -p "$scratch"
  # The regression inputs, one by one (a failing input is named).
  if ! "$bin" -timeout=1 -rss_limit_mb=2048 -artifact_prefix="$out/$t-" \
      "$here"/corpus/"$t"/* > "$out/$t-regression.log" 2>&1; then
    echo "fuzz_$t: a committed corpus input fails (log: $out/$t-regression.log)" >&2
    return 1
  fi
  if ! "$bin" -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 \
      -artifact_prefix="$out/$t-" "$scratch" "$here/corpus/$t" > "$out/$t.log" 2>&1; then
    echo "fuzz_$t: failed; input and log in $out ($t-*, $t.log)" >&2
    return 1
  fi
  echo "fuzz_$t: corpus clean, then $(grep -o 'Done [0-9]* runs' "$out/$t.log" | grep -o '[0-9]*')" \
    "inputs in ${seconds} s without a finding"
}

status=0
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pids=()
  for t in "${targets[@]:i:2}"; do
    run_one "$t" & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
done
exit $status
