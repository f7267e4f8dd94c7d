#!/usr/bin/env bash
# `clustersim nccl-log`: the hand-written excerpts' diagnoses and exit codes, JSON, and the real
# log from the device machine (when committed).
# Usage: nccl_log_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"
logs="$src/tests/data/nccl-logs"

expect() {  # file, exit code, words in the output
  local file="$1" code="$2"
  shift 2
  "$bin" nccl-log "$logs/$file" >"$tmp/out.txt" 2>&1
  local rc=$?
  [ "$rc" -eq "$code" ] || fail "$file: exit $rc, want $code"
  for want in "$@"; do grep -qF -- "$want" "$tmp/out.txt" || fail "$file: lacks '$want'"; done
}
expect ib-gdr-2node.log 0 "no problem found" "NET/IB" "RDMA enabled" "hosts       2"
expect socket-fallback.log 1 "socket fallback" "NCCL_IB_DISABLE=1" "NCCL_SOCKET_IFNAME=eth0 picks eth0"
expect gdr-disabled.log 0 "GPUDirect RDMA is off"
expect single-node-shm.log 0 "SHM transport"
expect timeout-watchdog.log 1 "timeout / watchdog" "ncclInternalError"

"$bin" nccl-log "$logs/socket-fallback.log" --json >"$tmp/s.json"
python3 - "$tmp/s.json" <<'PY' || fail "nccl-log --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["hosts"] == ["node-a", "node-b"] and d["nranks"] == 16
assert any(t["transport"] == "NET/Socket" for t in d["transports"])
assert d["findings"][0]["severity"] == "error"
PY

real="$src/scenarios/measurements/nccl-debug-info-2xh200.log"
if [ -f "$real" ]; then
  "$bin" nccl-log "$real" >"$tmp/real.txt" || fail "the real 2 x H200 log should show no error"
  grep -q "P2P" "$tmp/real.txt" || fail "the real log's GPUs connect over P2P"
fi
"$bin" nccl-log /no/such.log >/dev/null 2>&1
[ $? -eq 2 ] || fail "a missing log should exit 2"

finish nccl_log_cli
