#!/usr/bin/env bash
# `clustersim compare` (and `plan --engine des --trace`, the simulator's other entry point):
# the RoCE vs InfiniBand pair of the same 256-GPU cluster side by side with
# the simulator (table, differences and why, JSON, a scaling plot through gnuplot), the analytic
# engine, and bad input (one scenario, unknown engine, plot format) exiting 2.
# Usage: compare_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"
# A wide terminal for the content checks below; the width itself is tested at the end.
export COLUMNS=400
ib="$src/scenarios/ib-256gpu.yaml"
roce="$src/scenarios/roce-256gpu.yaml"

# Human report: both designs, the breakdown, saturation per tier, the differences and why.
if "$bin" compare "$ib" "$roce" >"$tmp/out.txt" 2>"$tmp/err.txt"; then
  for want in "ib-256gpu-h100" "roce-256gpu-h100" "step time" "tokens/s" "MFU" "exposed DP" \
              "busiest link per tier" "cost per M tokens" "roce-256gpu-h100 vs ib-256gpu-h100" \
              "protocol efficiency"; do
    grep -qF -- "$want" "$tmp/out.txt" || fail "compare output lacks '$want'"
  done
  # RoCE against InfiniBand: the published side-by-side figure, and the model's own gap.
  tr -s ' \n' ' ' <"$tmp/out.txt" | grep -qE "measured level with InfiniBand .*Tolly #225107\), where these efficiencies give RoCE 4\.26% less" ||
    fail "compare does not set the NIC efficiencies against the published RoCE / InfiniBand figure"
else
  fail "compare exited $? ($(cat "$tmp/err.txt"))"
fi

# The fabric ladder's step column: the dearer fabric's step time against the cheaper's, + for
# slower, - for faster, the sign the JSON's speedup (cheaper's step / dearer's - 1) implies.
ladder_a="$src/scenarios/tco/ladder-04n-roce200.yaml" ladder_b="$src/scenarios/tco/ladder-04n-ndr.yaml"
if "$bin" compare "$ladder_a" "$ladder_b" --engine analytic >"$tmp/ladder.txt" 2>"$tmp/err.txt" &&
   "$bin" compare "$ladder_a" "$ladder_b" --engine analytic --json >"$tmp/ladder.json" 2>>"$tmp/err.txt"; then
  step=$(awk '$1 == "32" && $2 == "roce-200" {print $8}' "$tmp/ladder.txt")
  python3 - "$tmp/ladder.json" "$step" <<'PY' || fail "the fabric ladder's step column ('$step') disagrees with its JSON"
import json, sys
rung = json.load(open(sys.argv[1]))["fabric_ladder"][0]
shown = float(sys.argv[2].rstrip("%")) / 100
assert abs(shown - (1 / (1 + rung["speedup"]) - 1)) < 0.001, (shown, rung["speedup"])
PY
else
  fail "compare of the ladder pair exited $? ($(cat "$tmp/err.txt"))"
fi

# JSON: two designs, RoCE slower than InfiniBand (its NICs deliver 90% vs 94%), reasons given.
if "$bin" compare "$ib" "$roce" --json >"$tmp/out.json" 2>"$tmp/err.txt"; then
  python3 - "$tmp/out.json" <<'PY' || fail "compare --json content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["engine"] == "des", d["engine"]
ib, roce = d["designs"]
assert ib["scenario"] == "ib-256gpu-h100" and roce["scenario"] == "roce-256gpu-h100"
assert roce["step_time_s"] > ib["step_time_s"] > 0
diff = d["differences"][0]
assert 1.0 < diff["step_time_ratio"] < 1.2, diff["step_time_ratio"]
assert any("94%" in r and "90%" in r for r in diff["reasons"]), diff["reasons"]
for des in d["designs"]:
    assert des["fabric"]["patterns"], "simulated patterns missing"
    assert set(des["breakdown_s"]["exposed_comm"]) == {"dp", "tp", "pp", "cp", "ep"}
PY
else
  fail "compare --json exited $? ($(cat "$tmp/err.txt"))"
fi

# RoCE routed by ECMP hash (as most RoCE fabrics are): the DP rings' flows collide on spine
# uplinks. compare names the collisions, the saturated links and the slowdown they cause; the
# InfiniBand design (adaptive routing) has none.
roce_ecmp="$src/scenarios/roce-256gpu-ecmp.yaml"
"$bin" compare "$ib" "$roce_ecmp" >"$tmp/ecmp.txt" 2>"$tmp/err.txt" ||
  fail "compare with ECMP exited $? ($(cat "$tmp/err.txt"))"
grep -qE "ran [0-9.]+x its uncontended time: ECMP collisions" "$tmp/ecmp.txt" ||
  fail "compare does not report ECMP collisions: $(cat "$tmp/ecmp.txt")"
grep -qE "leaf-spine [0-9.]+% \(sat\.\)" "$tmp/ecmp.txt" || fail "no saturated leaf-spine link shown"
"$bin" compare "$ib" "$roce_ecmp" --json >"$tmp/ecmp.json" 2>"$tmp/err.txt" ||
  fail "compare --json with ECMP exited $?"
python3 - "$tmp/ecmp.json" <<'PY' || fail "compare --json ECMP collisions"
import json, sys
d = json.load(open(sys.argv[1]))
ib, roce = d["designs"]
assert not any(p["ecmp_collisions"] for p in ib["fabric"]["patterns"])
hit = [p for p in roce["fabric"]["patterns"] if p["ecmp_collisions"]]
assert hit and all(p["slowdown"] > 1.5 for p in hit), [(p["what"], p["slowdown"]) for p in hit]
ls = [t for p in hit for t in p["tiers"] if t["tier"] == "leaf-spine"]
assert ls and all(t["saturated"] and t["mean_utilisation"] < t["max_utilisation"] for t in ls), ls
assert roce["step_time_s"] > 1.5 * ib["step_time_s"]
assert any("ECMP collisions" in r for r in d["differences"][0]["reasons"]), d["differences"]
# What the fabric's settings would give: more queue pairs per connection (each its own flow for
# the hash) and adaptive routing, each simulated. Fewer collisions, never slower than before,
# and adaptive routing removes them (no pattern slower than uncontended).
assert ib["fabric"]["what_if"] == []
w = {x["setting"].split(" ")[0]: x for x in roce["fabric"]["what_if"]}
assert set(w) == {"NCCL_IB_QPS_PER_CONNECTION=4", "NCCL_IB_QPS_PER_CONNECTION=16", "adaptive"}, w
worst = max(p["slowdown"] for p in roce["fabric"]["patterns"])
q4, q16, ar = w["NCCL_IB_QPS_PER_CONNECTION=4"], w["NCCL_IB_QPS_PER_CONNECTION=16"], w["adaptive"]
assert q16["step_time_ratio"] <= q4["step_time_ratio"] < 1, w
assert q4["worst_slowdown"] < worst and ar["worst_slowdown"] < 1.01, w
assert any("NCCL_IB_QPS_PER_CONNECTION=4" in r for r in d["differences"][0]["reasons"])
# Two other draws of ECMP's hash, each a whole step between adaptive routing's and the worst.
other = roce["fabric"]["other_ecmp_hash_step_time_s"]
assert len(other) == 2 and all(ar["step_time_s"] * (1 - 1e-9) <= t for t in other), (other, ar)
PY
grep -qF "behind the collisions: ECMP hashes each of NCCL's connections" "$tmp/ecmp.txt" ||
  fail "compare does not name the QP and routing settings: $(cat "$tmp/ecmp.txt")"
grep -qE "^      adaptive routing \(routing: adaptive\): step .* \(-[0-9.]+%\)" "$tmp/ecmp.txt" ||
  fail "compare does not say what adaptive routing would give"
tr -s ' \n' ' ' <"$tmp/ecmp.txt" | grep -qF "how sure: one ECMP hash of the flows" ||
  fail "compare does not say how sure its ECMP collisions are"
# Two more simulations of the ECMP fabric (six steps each with its what-ifs, 13-16 s a step
# under the sanitizers, CLUSTERSIM_TIME_SCALE above 1), left to the optimised build: the same
# code as above, in the other order and through plan.
if [ "${CLUSTERSIM_TIME_SCALE:-1}" -le 1 ]; then
  # The colliding fabric first (the baseline): its collisions and settings are named all the same.
  "$bin" compare "$roce_ecmp" "$ib" >"$tmp/ecmp-first.txt" 2>/dev/null || fail "compare RoCE first"
  grep -qE "^  - in [a-z0-9-]+: dp [a-z_]+ .* ran [0-9.]+x its uncontended time: ECMP collisions" \
    "$tmp/ecmp-first.txt" || fail "compare with the ECMP fabric first does not name its collisions"
  grep -qF "NCCL_IB_QPS_PER_CONNECTION=16 (qps_per_connection: 16): step" "$tmp/ecmp-first.txt" ||
    fail "compare with the ECMP fabric first does not name the QP setting"

  # The scenario key itself: 16 QPs per connection spread the same fabric's flows.
  sed 's/^    routing: ecmp/    routing: ecmp\n    qps_per_connection: 16/' "$roce_ecmp" >"$tmp/qps16.yaml"
  grep -q "qps_per_connection: 16" "$tmp/qps16.yaml" || fail "test setup: no qps line in $tmp/qps16.yaml"
  "$bin" plan "$tmp/qps16.yaml" --json >"$tmp/qps16.json" 2>"$tmp/err.txt" ||
    fail "plan with qps_per_connection exited $? ($(cat "$tmp/err.txt"))"
  "$bin" plan "$roce_ecmp" --json >"$tmp/qps1.json" 2>"$tmp/err.txt" || fail "plan ecmp exited $?"
  python3 - "$tmp/qps1.json" "$tmp/qps16.json" <<'PY' || fail "qps_per_connection had no effect"
import json, sys
one, many = (json.load(open(f)) for f in sys.argv[1:3])
assert many["step_time_s"] < 0.9 * one["step_time_s"], (one["step_time_s"], many["step_time_s"])
PY
fi
sed 's/^    routing: ecmp/    routing: ecmp\n    qps_per_connection: 0/' "$roce_ecmp" >"$tmp/qps0.yaml"
expect_bad_match plan "qps0.yaml:[0-9]+:[0-9]+: .*qps_per_connection.*must be at least 1" "$tmp/qps0.yaml"
sed 's/^    routing: ecmp/    routing: ecmp\n    qps_per_connection: 129/' "$roce_ecmp" >"$tmp/qps129.yaml"
expect_bad_match plan "qps129.yaml:[0-9]+:[0-9]+: .*at most 128 queue pairs" "$tmp/qps129.yaml"

# Analytic engine: the same designs, no fabric section.
if "$bin" compare "$ib" "$roce" --engine analytic --json >"$tmp/an.json" 2>"$tmp/err.txt"; then
  python3 -c "
import json, sys
d = json.load(open('$tmp/an.json'))
assert d['engine'] == 'analytic' and 'fabric' not in d['designs'][0]
" || fail "compare --engine analytic content"
else
  fail "compare --engine analytic exited $?"
fi

# Scaling plot through gnuplot (when installed): a PNG file, and an SVG.
if command -v gnuplot >/dev/null 2>&1; then
  if "$bin" compare "$ib" "$roce" --plot "$tmp/scaling.png" >"$tmp/plot.txt" 2>"$tmp/err.txt"; then
    head -c 8 "$tmp/scaling.png" | od -An -c | grep -q "P   N   G" || fail "--plot did not write a PNG"
    grep -qF "Scaling plot" "$tmp/plot.txt" || fail "compare does not name the plot"
  else
    fail "compare --plot exited $? ($(cat "$tmp/err.txt"))"
  fi
  "$bin" compare "$ib" "$roce" --engine analytic --plot "$tmp/scaling.svg" >/dev/null 2>&1 &&
    grep -q "<svg" "$tmp/scaling.svg" || fail "--plot .svg did not write an SVG"
  # A quote in the file name is passed to gnuplot quoted, not cut off.
  "$bin" compare "$ib" "$roce" --engine analytic --plot "$tmp/it's.svg" >/dev/null 2>"$tmp/err.txt" &&
    grep -q "<svg" "$tmp/it's.svg" || fail "--plot it's.svg did not write an SVG: $(cat "$tmp/err.txt")"
fi

# plan --engine des: the simulated report, the analytic figure beside it, a Chrome trace.
if "$bin" plan --engine des --trace "$tmp/step.json" >"$tmp/plan.txt" 2>"$tmp/err.txt"; then
  grep -qF "discrete-event simulation" "$tmp/plan.txt" || fail "plan --engine des does not say so"
  grep -qF "analytic model: step" "$tmp/plan.txt" || fail "plan --engine des lacks the analytic figure"
  python3 - "$tmp/step.json" <<'PY' || fail "plan --trace is not a Chrome trace"
import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e["ph"] == "X"]
assert len(ev) > 100 and all(e["dur"] >= 0 for e in ev)
assert {e["cat"] for e in ev} >= {"compute", "tp", "dp"}, {e["cat"] for e in ev}
PY
else
  fail "plan --engine des exited $? ($(cat "$tmp/err.txt"))"
fi
"$bin" plan --engine des --json | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d['engine'] == 'des' and d['step_time_s'] > 0 and d['analytic_step_time_s'] > 0
" || fail "plan --engine des --json"
"$bin" plan --engine analytic --trace "$tmp/x.json" >/dev/null 2>"$tmp/err.txt"
[ $? -eq 2 ] || fail "plan --trace with --engine analytic should exit 2"
"$bin" plan --trace "$tmp/x.json" >/dev/null 2>"$tmp/err.txt" || fail "plan --trace (default engine des) exited $?"
[ -s "$tmp/x.json" ] || fail "plan --trace with the default engine wrote no trace"

# Bad input: exit 2 with a message.
"$bin" compare "$ib" >/dev/null 2>"$tmp/err.txt"
[ $? -eq 2 ] || fail "one scenario should exit 2"
"$bin" compare "$ib" "$roce" --engine fast >/dev/null 2>"$tmp/err.txt"
[ $? -eq 2 ] && grep -q "engine" "$tmp/err.txt" || fail "unknown engine should exit 2 naming --engine"
"$bin" compare "$ib" "$roce" --plot "$tmp/x.gif" >/dev/null 2>"$tmp/err.txt"
[ $? -eq 2 ] && grep -q ".png or .svg" "$tmp/err.txt" || fail "a .gif plot should exit 2"
"$bin" compare "$ib" "$tmp/missing.yaml" >/dev/null 2>"$tmp/err.txt"
[ $? -eq 2 ] || fail "a missing scenario should exit 2"

# FP8 against BF16 on the same job: fp8_vs_bf16 SCENARIO NAME LOW HIGH writes the scenario's
# fp8 twin (as $tmp/NAME.yaml) and checks compare --json: each design's MFU against its own
# precision's peak and both against the bf16 peak, the fp8 step LOW..HIGH of the bf16 one, the
# memory moved (FP8 weight copies and saved inputs).
fp8_vs_bf16() {
  local scenario="$1" name="$2"
  sed "s/precision: bf16/precision: fp8/; s/^name: .*/name: $name/" "$scenario" >"$tmp/$name.yaml"
  "$bin" compare "$scenario" "$tmp/$name.yaml" --engine analytic --json >"$tmp/$name.json" ||
    { fail "compare bf16 vs fp8 ($name) --json exited $?"; return; }
  python3 - "$tmp/$name.json" "$3" "$4" <<'PY' || fail "compare bf16 vs fp8 ($name) --json content"
import json, sys
d = json.load(open(sys.argv[1]))
low, high = float(sys.argv[2]), float(sys.argv[3])
bf, f8 = d["designs"]
assert bf["precision"] == "bf16" and f8["precision"] == "fp8"
assert abs(bf["mfu"] - bf["mfu_bf16_peak"]) < 1e-12
assert abs(f8["mfu_bf16_peak"] - 1979 / 989 * f8["mfu"]) < 1e-9  # the H100 peaks
assert low < f8["step_time_s"] / bf["step_time_s"] < high, (f8["step_time_s"], bf["step_time_s"])
assert f8["memory_per_gpu_bytes"] != bf["memory_per_gpu_bytes"]
PY
}
# A MoE job (Mixtral 8x22B), also as text: both peaks named, the reason named.
mx="$src/scenarios/mixtral-8x22b-256xh100.yaml"
fp8_vs_bf16 "$mx" mixtral-fp8 0.5 0.85
"$bin" compare "$mx" "$tmp/mixtral-fp8.yaml" --engine analytic >"$tmp/fp8.txt" 2>"$tmp/err.txt" ||
  fail "compare bf16 vs fp8 exited $? ($(cat "$tmp/err.txt"))"
for want in "of bf16 peak" "of fp8 peak" "MFU of the bf16 peak" "precision: bf16 vs fp8" "exposed EP"; do
  grep -qF -- "$want" "$tmp/fp8.txt" || fail "compare bf16 vs fp8 lacks '$want'"
done
# A dense job (Llama 3 8B on 8 H100).
fp8_vs_bf16 "$src/scenarios/llama3-8b-8xh100.yaml" llama-fp8 0.6 0.9

# Fat-tree vs rail-optimized for a MoE job whose all-to-all crosses nodes: the same step, and
# the report says why rather than nothing.
q="$src/scenarios/moe-qwen3-235b-256xh100"
"$bin" compare "$q-ib.yaml" "$q-rail.yaml" >"$tmp/rail.txt" 2>"$tmp/err.txt" ||
  fail "compare fat-tree vs rail exited $? ($(cat "$tmp/err.txt"))"
grep -qF "rail-optimized" "$tmp/rail.txt" || fail "compare fat-tree vs rail: no fabric line"
grep -qF "neither fabric slowed the collectives below what the NICs carry" "$tmp/rail.txt" ||
  fail "compare fat-tree vs rail does not say why nothing moved: $(tail -3 "$tmp/rail.txt")"

# The five seed interconnects side by side fit a 100-column terminal: one table (names shown
# after their common prefix, each network in full below it), every line within 100 columns. At
# 80 columns the table splits into blocks of designs, still every line within 80.
seeds=()
for n in 100gbe-tcp 200gbe-roce 400g-ib 400gbe-roce 8x200g-ib-bonded; do
  seeds+=("$src/scenarios/seed/interconnect-$n.yaml")
done
for cols in 100 80; do
  COLUMNS=$cols "$bin" compare "${seeds[@]}" >"$tmp/w$cols.txt" 2>"$tmp/err.txt" ||
    fail "compare of the five seed interconnects exited $? ($(cat "$tmp/err.txt"))"
  widest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$tmp/w$cols.txt")
  [ "$widest" -le "$cols" ] || fail "compare at COLUMNS=$cols printed a line of $widest columns"
  grep -qF "(designs named seed-interconnect-...)" "$tmp/w$cols.txt" || fail "no name prefix note"
  grep -qF "* network of seed-interconnect-8x200g-ib-bonded: 1 x ib-hdr (1.6 Tb/s" \
    "$tmp/w$cols.txt" || fail "compare at COLUMNS=$cols: no full network line below the table"
done
grep -qE "^ +100gbe-tcp +200gbe-roce +400g-ib +400gbe-roce +8x200g-ib-bonded$" "$tmp/w100.txt" ||
  fail "compare at 100 columns: the five designs are not one table"
[ "$(grep -c "^  GPUs " "$tmp/w80.txt")" -ge 2 ] || fail "compare at 80 columns: no blocks"
# Not a terminal and no COLUMNS: 80.
env -u COLUMNS "$bin" compare "${seeds[@]}" >"$tmp/w.txt" 2>/dev/null || fail "compare without COLUMNS"
cmp -s "$tmp/w.txt" "$tmp/w80.txt" || fail "compare without COLUMNS is not the 80-column output"

finish compare_cli
