#!/usr/bin/env bash
# `clustersim calibrate`: fits a measurement file into an overlay that `collective` and `plan`
# apply; several files combine; bad input exits 2.
# Usage: calibrate_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"
synthetic="$src/tests/data/synthetic-h200-2gpu.json"

# The overlay: written, schema and GPU, one regime list per collective, residuals printed.
if "$bin" calibrate "$synthetic" -o "$tmp/cal.yaml" >"$tmp/out.txt" 2>"$tmp/err.txt"; then
  for want in "schema: clustersim.calibration/1" "gpu: h200-sxm" "op: all_reduce" "regimes:" \
              "nccl_disabled_algorithms: [nvls]" "hbm_efficiency:" "precision: bf16"; do
    grep -qF -- "$want" "$tmp/cal.yaml" || fail "overlay lacks '$want'"
  done
  for want in "Calibration of h200-sxm" "all_gather" "rms res" "HBM copy" \
              "Transfer to communicator sizes not measured" "bandwidth scale" \
              "GEMM: efficiency = in-tile max x the shape's tile/wave efficiency (compute_model.h)"; do
    grep -qF -- "$want" "$tmp/out.txt" || fail "calibrate output lacks '$want'"
  done
  # The saturating GEMM model's half is gone from the overlay.
  ! grep -qE "half_efficiency_flops|half_identified" "$tmp/cal.yaml" \
    || fail "the overlay still carries the saturating GEMM model's half"
else
  fail "calibrate exited $? ($(cat "$tmp/err.txt"))"
fi

# JSON: the fits recover the synthetic truth (all_reduce 360 GB/s at large sizes, 9 us small).
"$bin" calibrate "$synthetic" -o "$tmp/cal2.yaml" --json >"$tmp/cal.json" || fail "calibrate --json"
python3 - "$tmp/cal.json" <<'PY' || fail "calibrate --json content"
import json, sys
d = json.load(open(sys.argv[1]))
ar = next(c for c in d["collectives"] if c["op"] == "all_reduce")
big, small = ar["regimes"][-1], ar["regimes"][0]
assert abs(big["busbw_GBps"] / 360 - 1) < 0.05, big
assert abs(small["latency_us"] / 9 - 1) < 0.05, small
assert big["max_size_bytes"] is None and small["min_size_bytes"] == 0
g = d["gemm"][0]
assert g["sustained_scaled"] is True, g
assert "half_efficiency_flops" not in g and "half_identified" not in g, g
# In-tile: the synthetic 4096^3 and 8192^3 rows over their tile efficiency (0.94, 0.95) give
# ~0.79; the 655-660 TFLOP/s burn at 8192^3 scales it by ~0.88.
assert abs(g["short_max_efficiency"] / 0.788 - 1) < 0.01, g
assert abs(g["max_efficiency"] / g["short_max_efficiency"] - 0.884) < 0.01, g
tr = {t["op"]: t for t in d["transfer"]}
assert set(tr) == {"all_reduce", "all_gather", "reduce_scatter"}, tr
for t in tr.values():
    assert t["scope"] == "one_node" and t["fitted_ranks"] == [2], t
    assert 0.1 < t["bandwidth_scale"] < 3 and t["points"] == 31, t
PY

# --attention-reference: PyTorch's SDPA on the same GPU (call 8) gives the applied attention
# curve; validate's own kernel is recorded only; a file without sdpa rows exits 2.
m="$src/scenarios/measurements"
"$bin" calibrate "$m/call8/h200-1gpu-shapes.json" --attention-reference "$m/call8/torch-shapes.json" \
  -o "$tmp/att.yaml" >"$tmp/att.txt" || fail "calibrate --attention-reference"
for want in "Attention forward (torch-sdpa, applied to the planner)" \
            "Attention forward (clustersim-flash, recorded, not applied)"; do
  grep -qF -- "$want" "$tmp/att.txt" || fail "calibrate output lacks '$want'"
done
grep -qF "source: torch-sdpa, applied: true" "$tmp/att.yaml" || fail "overlay lacks the applied SDPA curve"
"$bin" calibrate "$synthetic" --attention-reference "$synthetic" -o "$tmp/bad.yaml" >/dev/null 2>"$tmp/err.txt"
[ $? -eq 2 ] || fail "a reference without sdpa rows should exit 2"
grep -qF 'no "sdpa" rows' "$tmp/err.txt" || fail "the reference error says what is missing"
[ ! -e "$tmp/bad.yaml" ] || fail "nothing written on bad input"

# The overlay applies: `collective` on 2 x H200 predicts the measured 8 GiB all_reduce.
cat >"$tmp/h200x2.yaml" <<YAML
name: h200x2
cluster:
  nodes: 1
  node:
    gpu: h200-sxm
    gpus_per_node: 2
workload:
  model: gpt2-124m
  seq_len: 1024
  global_batch: 2
  micro_batch: 1
  parallelism:
    dp: 2
calibration: cal.yaml
YAML
"$bin" collective --scenario "$tmp/h200x2.yaml" --op all_reduce -b 8G -e 8G --json >"$tmp/coll.json" \
  || fail "collective with the scenario's calibration: key"
python3 - "$tmp/coll.json" <<'PY' || fail "calibrated collective"
import json, sys
r = json.load(open(sys.argv[1]))["rows"][0]
assert r["bottleneck"] == "calibrated", r
assert abs(r["busbw_GBps"] / 360 - 1) < 0.05, r
PY
"$bin" collective --scenario "$tmp/h200x2.yaml" --calibration /no/such.yaml >/dev/null 2>&1
[ $? -eq 2 ] || fail "a missing --calibration file should exit 2"
"$bin" plan "$src/scenarios/llama3-8b-8xh100.yaml" --calibration "$tmp/cal.yaml" >/dev/null 2>"$tmp/err.txt"
[ $? -eq 2 ] && grep -q "measured on h200-sxm" "$tmp/err.txt" \
  || fail "an H200 overlay on an H100 plan should exit 2 naming the GPUs"
"$bin" plan "$src/scenarios/h200-8gpu.yaml" --calibration "$tmp/cal.yaml" >"$tmp/plan-cal.txt" \
  || fail "plan with an H200 overlay"
grep -qF "calibrated by $tmp/cal.yaml" "$tmp/plan-cal.txt" || fail "plan names the overlay in force"
"$bin" plan "$src/scenarios/h200-8gpu.yaml" --calibration "$tmp/cal.yaml" --engine analytic --json \
  | python3 -c "import json,sys; assert json.load(sys.stdin)['calibration'].endswith('cal.yaml')" \
  || fail "plan --json names the overlay in force"

# An overlay of the saturating GEMM model (half_efficiency_flops, half_identified) still loads.
sed 's/^\(  - {precision: bf16, .*\)points:/\1half_efficiency_flops: 4.1e+09, half_identified: true, points:/' \
  "$tmp/cal.yaml" >"$tmp/old.yaml"
grep -qF "half_efficiency_flops: 4.1e+09" "$tmp/old.yaml" || fail "the old-style overlay was not made"
"$bin" check "$synthetic" --calibration "$tmp/old.yaml" --summary >/dev/null \
  || fail "an overlay with the obsolete GEMM keys should load"

# Several files combine (the same file twice: every size measured twice).
"$bin" calibrate "$synthetic" "$synthetic" -o "$tmp/two.yaml" >/dev/null || fail "two files"
grep -q "sha256:" "$tmp/two.yaml" || fail "sources carry the files' SHA-256"

# nccl-tests' own output with the scenario of its machine: calibrated, then checked with it.
h2="$src/scenarios/measurements/h200-2gpu.scenario.yaml"
"$bin" calibrate "$src/scenarios/measurements/nccl-tests-2gpu.txt" --scenario "$h2" \
  -o "$tmp/nt.yaml" >"$tmp/nt.txt" || fail "calibrate on nccl-tests text exited $?"
grep -q "all_reduce" "$tmp/nt.yaml" || fail "the overlay from nccl-tests text has no all_reduce"
"$bin" check "$src/scenarios/measurements/nccl-tests-2gpu.txt" --scenario "$h2" \
  --calibration "$tmp/nt.yaml" --sizes 64KiB:8GiB --max-median-error 0.05 >/dev/null ||
  fail "nccl-tests text checked against its own calibration missed a 5% median"
"$bin" calibrate "$src/scenarios/measurements/nccl-tests-2gpu.txt" -o "$tmp/x.yaml" \
  >/dev/null 2>"$tmp/err.txt"
[ $? -eq 2 ] || fail "calibrate on nccl-tests text without --scenario should exit 2"
grep -qF -- "--scenario" "$tmp/err.txt" || fail "the error should name --scenario"

# Bad input: exit 2.
"$bin" calibrate /no/such.json -o "$tmp/x.yaml" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a missing measurement file should exit 2"
echo '{"schema": "other"}' >"$tmp/bad.json"
"$bin" calibrate "$tmp/bad.json" -o "$tmp/x.yaml" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a file of another schema should exit 2"

finish calibrate_cli
