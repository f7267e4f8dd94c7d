#!/usr/bin/env bash
# `clustersim check`: predicted vs measured, errors per group, cross-validation, IMPOSSIBLE rows.
# On the real 2 x H200 files (call 4 and call 7): the held-out error targets of issue 6 (median
# <= 5%, max <= 15% for every collective over 64 KiB - 8 GiB).
# Usage: check_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"
synthetic="$src/tests/data/synthetic-h200-2gpu.json"
real="$src/scenarios/measurements/h200-2gpu.json"

# Uncalibrated: a table and statistics, exit 0.
"$bin" check "$synthetic" >"$tmp/out.txt" 2>&1 || fail "check exited $?"
for want in "uncalibrated analytic model" "median |err|" "all_reduce x2" "gemm bf16"; do
  grep -qF -- "$want" "$tmp/out.txt" || fail "check output lacks '$want'"
done

# Cross-validation with the gates: fitted and held-out rows, targets met.
for f in "$synthetic" "$real" "$src/scenarios/measurements/call7/h200-2gpu.json"; do
  [ -f "$f" ] || continue
  "$bin" check "$f" --holdout every-other --sizes 64KiB:8GiB --max-median-error 0.05 \
    --max-error 0.15 --json >"$tmp/cv.json" || fail "$f: held-out error gate missed"
  python3 - "$tmp/cv.json" <<'PY' || fail "$f: cross-validation JSON"
import json, sys
d = json.load(open(sys.argv[1]))
held = [s for s in d["stats"] if s["set"] == "held_out"]
assert len(held) >= 3, held
for s in held:
    assert s["median_abs_error"] <= 0.05 and s["max_abs_error"] <= 0.15, s
assert d["impossible_rows"] == 0
PY
done

# A measured time faster than physics is IMPOSSIBLE and exits 1.
python3 - "$synthetic" "$tmp/fast.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["collectives"]:
    if r["op"] == "all_reduce" and r["size_bytes"] == 8589934592:
        for p in ("out_of_place", "in_place"):
            r[p]["time_us"] /= 4
json.dump(d, open(sys.argv[2], "w"))
PY
"$bin" check "$tmp/fast.json" --summary >"$tmp/fast.txt" 2>&1
[ $? -eq 1 ] || fail "an impossible row should exit 1"
grep -q "IMPOSSIBLE: all_reduce x2 8 GiB" "$tmp/fast.txt" || fail "the impossible row is named"

# With an overlay from calibrate; --holdout and --calibration together are refused.
"$bin" calibrate "$synthetic" -o "$tmp/cal.yaml" >/dev/null || fail "calibrate"
"$bin" check "$synthetic" --calibration "$tmp/cal.yaml" --summary >"$tmp/cal.txt" || fail "check --calibration"
grep -q "calibrated by" "$tmp/cal.txt" || fail "check names the overlay"
"$bin" check "$synthetic" --calibration "$tmp/cal.yaml" --holdout every-other >/dev/null 2>&1
[ $? -eq 2 ] || fail "--holdout with --calibration should exit 2"
"$bin" check /no/such.json >/dev/null 2>&1
[ $? -eq 2 ] || fail "a missing file should exit 2"
# --sizes MIN:MAX: reversed ends are refused, not read as an empty range.
expect_bad check "--sizes: '8GiB:64KiB': MIN is above MAX" "$synthetic" --sizes 8GiB:64KiB
expect_bad check "--sizes: expected MIN:MAX" "$synthetic" --sizes 64KiB:lots

# Transfer: an overlay fitted on 2 GPUs predicts the 8-GPU file through its per-op corrections
# (basis "transfer"); the 8-GPU file's own overlay through its regimes (basis "fit"). The
# synthetic files stand in for issue 7's; validate/device/after_x8.sh is the pipeline it will run.
eight="$src/tests/data/synthetic-h200-8gpu.json"
grep -qF "transfer:" "$tmp/cal.yaml" || fail "the 2-GPU overlay has no transfer section"
"$bin" check "$eight" --calibration "$tmp/cal.yaml" --sizes 64KiB:8GiB --json >"$tmp/tr.json" \
  || fail "check of the 8-GPU file with the 2-GPU overlay"
python3 - "$tmp/tr.json" <<'PY' || fail "transfer JSON"
import json, sys
d = json.load(open(sys.argv[1]))
groups = {s["group"]: s for s in d["stats"]}
for op in ("all_reduce", "all_gather", "reduce_scatter"):
    s = groups[op + " x8"]
    assert s["basis"] == "transfer", s
    assert 0 < s["median_abs_error"] < 0.5, s
assert groups["gemm bf16"]["basis"] is None
PY
"$bin" check "$eight" --calibration "$tmp/cal.yaml" --summary >"$tmp/tr.txt" || fail "check text"
grep -q "basis transfer: the calibration has no regimes" "$tmp/tr.txt" || fail "transfer explained"
bash "$src/validate/device/after_x8.sh" "$bin" "$eight" "$tmp/x8" "$synthetic" >"$tmp/x8.txt" 2>&1 \
  || { cat "$tmp/x8.txt" >&2; fail "after_x8.sh on the synthetic files"; }
for want in "all_reduce x8" "(transfer)" "(fit)" "gate (median <= 5% after the 8-GPU calibration): met" \
  "Verdict: PASS"; do
  grep -qF -- "$want" "$tmp/x8.txt" || fail "after_x8.sh output lacks '$want'"
done
bash "$src/validate/device/after_x8.sh" "$bin" >/dev/null 2>&1
[ $? -eq 2 ] || fail "after_x8.sh without arguments should exit 2"

# nccl-tests' own output: the per-size error table for a log and its scenario; several logs
# make one measurement; a log without a scenario is bad input.
logs="$src/scenarios/measurements/call7/rounds"
h2="$src/scenarios/measurements/h200-2gpu.scenario.yaml"
"$bin" check "$src/scenarios/measurements/nccl-tests-2gpu.txt" --scenario "$h2" \
  --sizes 64KiB:8GiB >"$tmp/nt.txt" || fail "check on nccl-tests-2gpu.txt exited $?"
for want in "nccl-tests-2gpu.txt" "uncalibrated analytic model" "all_reduce x2" "sendrecv x2" \
            "median |err|"; do
  grep -qF -- "$want" "$tmp/nt.txt" || fail "check of nccl-tests text lacks '$want'"
done
# Our own 2 x H200 table, uncalibrated, 64 KiB - 8 GiB: today's median |error| per op plus a
# margin (all_gather and reduce_scatter stay ~20% slower than modelled at every size from 16 MiB:
# not explained yet; docs/accuracy.md).
"$bin" check "$src/scenarios/measurements/h200-2gpu.json" --sizes 64KiB:8GiB --json \
  >"$tmp/own.json" || fail "check on h200-2gpu.json exited $?"
python3 - "$tmp/own.json" <<'PY' || fail "our 2 x H200 table: error above its ceiling"
import json, sys
d = json.load(open(sys.argv[1]))
ceilings = {"all_reduce x2": 0.11, "all_gather x2": 0.10, "reduce_scatter x2": 0.055,
            "alltoall x2": 0.10, "broadcast x2": 0.08, "sendrecv x2": 0.055,
            # validate's 1 s GEMM rows at the power cap's clock, FP8 at its own in-tile ratio
            # (2.4, 3.0, 5.3, 2.3% and 0.8% today; 13-32% when 1 s rows were held to full clock)
            "gemm bf16": 0.04, "gemm fp16": 0.045, "gemm tf32": 0.065, "gemm fp8": 0.04,
            "gemm bf16 sustained": 0.02}
stats = {s["group"]: s for s in d["stats"] if s["set"] == "all"}
for group, ceiling in ceilings.items():
    assert stats[group]["median_abs_error"] <= ceiling, (group, stats[group]["median_abs_error"])
PY
"$bin" check "$logs/nccl-tests-round1.txt" "$logs/nccl-tests-round2.txt" --scenario "$h2" --json \
  >"$tmp/nt.json" || fail "check on two nccl-tests logs exited $?"
python3 - "$tmp/nt.json" <<'PY' || fail "check on two nccl-tests logs: content"
import json, sys
d = json.load(open(sys.argv[1]))
ops = {r["group"] for r in d["rows"]}
assert {"all_reduce x2", "all_gather x2", "reduce_scatter x2"} <= ops, ops
assert d["cluster"]["gpu"] == "h200-sxm"
PY
# Every committed public nccl-tests table (scenarios/measurements/public) is checked the way a
# user would check theirs: `check <table> --scenario <its hardware>`, uncalibrated, 64 KiB - 16 GiB
# (two A100 tables have one 10 GiB row). The ceilings are today's median |error| plus a margin,
# so that a change which makes the default curve worse fails here; they come down as the model
# improves (the target is 10% per table). The four B200 InfiniBand tables are clusters that ran
# far below their hardware (their README): the model must say so, i.e. predict every row at least 40% faster.
pub="$src/scenarios/measurements/public"
for entry in a100-2node-roce-all_reduce:0.08 a100-8gpu-all_reduce:0.05 a100-8gpu-sweep-all_reduce:0.10 \
  b200-2node-roce-all_reduce:0.04 h100-2node-ib-all_reduce:0.03 h100-2node-roce-all_reduce:0.03 \
  h100-8gpu-nvls-all_gather:0.06 h100-8gpu-nvls-all_reduce:0.045 \
  h100-8gpu-nvls-reduce_scatter:0.04 h100-8gpu-ring-all_reduce:0.045 \
  b200-2node-ib-all_reduce:-0.5 b200-2node-ib-alltoall:-0.4 \
  b200-2node-ib-sharp-off-all_reduce:-0.5 b200-2node-ib-sharp-on-all_reduce:-0.4; do
  name="${entry%%:*}" ceiling="${entry##*:}"
  [ -f "$pub/$name.txt" ] || { fail "missing public table $name.txt"; continue; }
  "$bin" check "$pub/$name.txt" --scenario "$pub/$name.scenario.yaml" --sizes 64KiB:16GiB \
    >"$tmp/pub.txt" 2>"$tmp/pub.err" || fail "check $name exited $? ($(cat "$tmp/pub.err"))"
  grep -qE "^  (all_reduce|all_gather|reduce_scatter|alltoall) x[0-9]+ +[0-9]+ (K|M|G)iB " \
    "$tmp/pub.txt" || fail "check $name: no per-size rows"
  "$bin" check "$pub/$name.txt" --scenario "$pub/$name.scenario.yaml" --sizes 64KiB:16GiB --json \
    >"$tmp/pub.json" 2>/dev/null || fail "check $name --json exited $?"
  python3 - "$tmp/pub.json" "$ceiling" "$name" <<'PY' || fail "check $name: error above its ceiling"
import json, sys
d = json.load(open(sys.argv[1]))
ceiling, name = float(sys.argv[2]), sys.argv[3]
(st,) = [s for s in d["stats"] if s["set"] == "all"]
rows = [r for r in d["rows"] if r["in_range"]]
assert st["rows"] == len(rows) >= 1, (name, st)
if ceiling >= 0:
    assert st["median_abs_error"] <= ceiling, (name, st["median_abs_error"], ceiling)
else:  # an underperforming cluster: every row measured far slower than predicted
    assert all(r["error"] < ceiling for r in rows), (name, [r["error"] for r in rows])
PY
done

expect_bad check "give --scenario SCENARIO" "$src/scenarios/measurements/nccl-tests-2gpu.txt"
expect_bad check "one measurement at a time" "$real" "$src/scenarios/measurements/h200-1gpu.json"

finish check_cli
