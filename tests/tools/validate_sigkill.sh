#!/usr/bin/env bash
# SIGKILL during `clustersim validate` (the fake backend, no GPU) at 50 random moments: whatever
# the process had written stays readable. The partial file is replaced atomically at each
# checkpoint (write to a temporary, rename), so a kill leaves either no file yet, or a partial
# file that parses as a measurement ("complete": false, the rows finished so far), or, once the
# run is done, the complete file and no partial. The last step renames the partial file, by then
# holding the complete measurement, to the final name, so a kill just before it leaves a partial
# file marked "complete": true and never both files. Never a torn or half-written file.
# Usage: bash validate_sigkill.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"

RANDOM=20261201  # reproducible moments
partials=0 completes=0 empties=0
for i in $(seq 1 50); do
  out="$tmp/run$i/m.json"
  mkdir -p "$tmp/run$i"
  # 0 - 1.5 s into a run of about 1.2 s (sizes 8 B - 1 MiB, 5 ms per launch).
  ms=$((RANDOM % 1500))
  delay=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
  "$bin" validate --backend fake --fake gpus=2,sleep=0.005 -e 1M --burn 0s -w 0 -n 2 \
    --skip attention -q --out "$out" >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if [ -e "$out" ]; then
    completes=$((completes + 1))
    [ -e "$out.partial" ] && fail "run $i (kill at ${delay}s): complete file and a partial left"
    "$bin" verify "$out" >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -le 1 ] || fail "run $i: the complete file does not read (exit $rc): $(cat "$tmp/err")"
  elif [ -e "$out.partial" ]; then
    partials=$((partials + 1))
    grep -Eq '"complete": (false|true)' "$out.partial" ||
      fail "run $i (kill at ${delay}s): partial not marked"
    "$bin" verify "$out.partial" >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -le 1 ] || fail "run $i (kill at ${delay}s): the partial file does not read (exit $rc): $(cat "$tmp/err")"
  else
    empties=$((empties + 1))
  fi
done
echo "50 kills: $partials partial files, $completes complete, $empties before the first checkpoint"
[ "$partials" -ge 10 ] || fail "only $partials of 50 kills landed mid-run: the timing no longer tests it"
finish validate_sigkill
