#!/usr/bin/env bash
# `clustersim plan`: the human report, the JSON keys of docs/scenario-format.md, every shipped
# scenario, the "DOES NOT FIT" verdict with advice, exit codes, and that a plan takes well under
# a second.
# Usage: plan_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"

# The embedded default: every section of the report.
if "$bin" plan >"$tmp/plan.txt" 2>"$tmp/err.txt"; then
  for want in "llama2-70b-on-32-h100" "step time" "tokens/s" "TFLOP/s per GPU" "MFU" \
              "Memory per GPU" "fits" "Time breakdown" "exposed DP communication" \
              "Communication per step" "Cost" "goodput" "Assumptions"; do
    grep -qF -- "$want" "$tmp/plan.txt" || fail "plan output lacks '$want'"
  done
else
  fail "plan exited $? ($(cat "$tmp/err.txt"))"
fi

# How far the accuracy corpus's runs of the plan's kind were off (scenarios/published/
# accuracy-classes.json, built in): the default's Hopper dense multi-node row, the simulator's as the plan
# is simulated; the analytic model's under --engine analytic and in the JSON; a GPU with no
# corpus run says its prediction is unchecked.
table="$src/scenarios/published/accuracy-classes.json"
want_line() {  # the line's figures for engine $1 and kind $2, from the table
  python3 - "$table" "$1" "$2" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
r = [r for r in t[sys.argv[2]] if r["class"] == sys.argv[3]][0]
pct = lambda f: f"{100 * f:.3g}%"
print(f"on the corpus's {r['runs']} published {r['class']} runs the "
      f"{'simulator' if sys.argv[2] == 'des' else 'analytic model'} is off by "
      f"{pct(r['median_abs_error'])} (median), 9 in 10 within {pct(r['p90_abs_error'])}, at worst "
      f"{pct(r['max_abs_error'])} ({r['worst']};")
PY
}
flat() { tr -s ' \n' ' ' <"$1"; }
grep -qF -- "$(want_line des "Hopper dense, multi-node")" <(flat "$tmp/plan.txt") ||
  fail "plan lacks the corpus's Hopper dense line: want '$(want_line des "Hopper dense, multi-node")'"
"$bin" plan --engine analytic >"$tmp/pa.txt" 2>/dev/null || fail "plan --engine analytic exited $?"
grep -qF -- "$(want_line analytic "Hopper dense, multi-node")" <(flat "$tmp/pa.txt") ||
  fail "plan --engine analytic lacks the analytic Hopper dense line"
"$bin" plan --engine analytic --set cluster.node.gpu=mi300x --json >"$tmp/pm.json" 2>/dev/null ||
  fail "plan on mi300x --json exited $?"
python3 -c 'import json,sys; k=json.load(open(sys.argv[1]))["corpus_accuracy"]; assert k=={"class":"mi300x dense, multi-node","runs":0}, k' \
  "$tmp/pm.json" || fail "plan --json on mi300x: corpus_accuracy is not {class: mi300x dense, multi-node, runs: 0}"
"$bin" plan --engine analytic --set cluster.node.gpu=mi300x >"$tmp/pm.txt" 2>/dev/null
grep -qF "no published run of this kind (mi300x dense, multi-node) is in the accuracy corpus" <(flat "$tmp/pm.txt") ||
  fail "plan on mi300x does not say its prediction is unchecked"

# The quantized GEMMs' rate and where it comes from, in the assumptions: Blackwell Ultra's NVFP4
# fitted on the accuracy corpus, the B200's NVFP4 and the H200's fp8 measured; a bf16 plan says
# nothing of it.
pub="$src/scenarios/published"
for case in "nvidia-gb-nvl72-fp4/mbridge-26.04.01-gb300-llama3-70b-64gpu-fp4.yaml|NVFP4 GEMMs at 68% of bf16's in-tile rate, each against its own peak (fitted on the accuracy corpus" \
            "nvidia-gb-nvl72-fp4/mbridge-26.04.01-gb200-llama3-70b-64gpu-fp4.yaml|NVFP4 GEMMs at 100% of bf16's in-tile rate, each against its own peak (cuBLAS measured on a B200)" \
            "nvidia-gb-nvl72-fp8/mbridge-26.04.01-gb300-llama3-70b-64gpu-mxfp8.yaml|MXFP8 GEMMs at 91% of bf16's in-tile rate, each against its own peak (per-tensor FP8's" \
            "nvidia-h100-fp8/mbridge-25.11-llama3-70b-64gpu-fp8.yaml|fp8 GEMMs at 91% of bf16's in-tile rate, each against its own peak (cuBLAS measured on an H200)"; do
  file=${case%%|*} want=${case#*|}
  "$bin" plan "$pub/$file" --engine analytic >"$tmp/q.txt" 2>"$tmp/err.txt" || fail "plan $file exited $?"
  grep -qF -- "$want" "$tmp/q.txt" || fail "plan $file lacks '$want'"
done
grep -qF "GEMMs at" "$tmp/plan.txt" && grep -qE "(NVFP4|MXFP8|fp8) GEMMs at" "$tmp/plan.txt" &&
  fail "a bf16 plan names a quantized GEMM rate"

# Unpriced cost in the unit that reads: a one-GPU step in GPU-seconds, a 64-GPU one of 4.5 s in
# GPU-hours.
"$bin" plan "$pub/clustersim-h100/clustersim-h100-134m-s2k-b8.yaml" --engine analytic >"$tmp/q.txt" ||
  fail "plan of a one-GPU step exited $?"
grep -qE "no price \(cost.gpu_hour\): 0\.0[0-9]+ GPU-seconds per step" "$tmp/q.txt" ||
  fail "a one-GPU step's cost is not in GPU-seconds: $(grep 'no price' "$tmp/q.txt")"
"$bin" plan "$pub/nvidia-gb-nvl72-fp4/mbridge-26.04.01-gb300-llama3-70b-64gpu-fp4.yaml" \
  --engine analytic >"$tmp/q.txt" || fail "plan of a 64-GPU step exited $?"
grep -qE "no price \(cost.gpu_hour\): 0\.0[0-9]+ GPU-hours per step" "$tmp/q.txt" ||
  fail "a 64-GPU step's cost is not in GPU-hours: $(grep 'no price' "$tmp/q.txt")"

# JSON: valid, the keys of docs/scenario-format.md with the right types, numbers that hang
# together.
if "$bin" plan --json >"$tmp/plan.json"; then
  python3 - "$tmp/plan.json" <<'PY' || fail "plan --json content"
import json, sys
d = json.load(open(sys.argv[1]))
num = (int, float)
for k, t in [("scenario", str), ("gpus", int), ("step_time_s", num), ("tokens_per_s", num),
             ("model_tflops_per_gpu", num), ("hardware_tflops_per_gpu", num), ("mfu", num),
             ("memory_per_gpu_bytes", num), ("memory_capacity_bytes", num), ("fits", bool),
             ("breakdown_s", dict), ("cost", dict)]:
    assert isinstance(d[k], t), (k, d.get(k))
b = d["breakdown_s"]
for k in ("compute", "exposed_comm", "bubble"):
    assert k in b, k
assert set(b["exposed_comm"]) == {"dp", "tp", "pp", "cp", "ep"}, b["exposed_comm"]
for k in ("usd_per_step", "usd_per_million_tokens", "run_usd"):
    assert isinstance(d["cost"][k], num), (k, d["cost"][k])
assert d["scenario"] == "llama2-70b-on-32-h100" and d["gpus"] == 32
assert 0 < d["mfu"] < 1
assert abs(d["tokens_per_s"] * d["step_time_s"] - 512 * 4096) < 1e-6 * 512 * 4096
assert d["hardware_tflops_per_gpu"] >= d["model_tflops_per_gpu"]
assert abs(d["mfu"] * 989 - d["model_tflops_per_gpu"]) < 1e-6 * d["model_tflops_per_gpu"]
assert d["memory_capacity_bytes"] == 80 * 2**30
parts = b["compute"] + sum(b["exposed_comm"].values()) + b["bubble"] + b["optimizer"]
assert abs(parts - d["step_time_s"]) < 1e-9 * d["step_time_s"], (parts, d["step_time_s"])
# $ per step = GPUs x hours x $2.50.
assert abs(d["cost"]["usd_per_step"] - 32 * d["step_time_s"] / 3600 * 2.5) < 1e-9
PY
else
  fail "plan --json exited $?"
fi

# Well under a second with the analytic engine (0.02 s on the 2-core development machine), and
# under 0.8 s with the default, the simulator (0.27-0.41 s there). The budget is the whole
# process's CPU time (user + system, every thread of it), the fastest of three runs, times
# CLUSTERSIM_TIME_SCALE (12 in the sanitizer build, where the simulator takes 1.0 s alone):
# CTest runs two tests at a time on two cores, and a neighbour's burst (mpirun's two ranks, the
# corpus) stretched this program's wall clock past the budget (0.809 s once) without costing it
# any work. The single-threaded program's CPU time is its wall time on an idle machine.
python3 - "$bin" "${CLUSTERSIM_TIME_SCALE:-1}" <<'PY' || fail "plan took too long"
import os, subprocess, sys, time
scale = float(sys.argv[2])
for engine, budget in (("analytic", 0.5 * scale), ("auto", 0.8 * scale)):
    times = []
    for _ in range(3):
        start = time.monotonic()
        child = subprocess.Popen([sys.argv[1], "plan", "--engine", engine, "--json"],
                                 stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        assert child.returncode == 0, f"plan --engine {engine} exited {child.returncode}"
        times.append(usage.ru_utime + usage.ru_stime)
        wall = time.monotonic() - start
        if times[-1] < budget:
            break
    assert min(times) < budget, (f"plan --engine {engine} used {min(times):.3f} s of CPU at best "
                                 f"of {len(times)} (budget {budget} s; last wall clock {wall:.3f} s)")
PY

# The default engine is the simulator; it agrees with the formulas within the overlap it adds.
"$bin" plan --json >"$tmp/des.json" || fail "plan --json (default engine) exited $?"
python3 - "$tmp/des.json" <<'PY' || fail "default plan is not the simulation, or strays from the analytic model"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["engine"] == "des", d["engine"]
ratio = d["step_time_s"] / d["analytic_step_time_s"]
assert 0.8 < ratio <= 1.01, ratio
PY

# On an ECMP fabric the simulated step is one draw of the hash: two other draws come beside it,
# in the JSON and the text; an adaptive fabric has none.
"$bin" plan "$src/scenarios/roce-256gpu-ecmp.yaml" --json >"$tmp/ecmp.json" || fail "plan (ecmp) exited $?"
"$bin" plan "$src/scenarios/ib-256gpu.yaml" --json >"$tmp/ib.json" || fail "plan (ib) exited $?"
python3 - "$tmp/ecmp.json" "$tmp/ib.json" <<'PY' || fail "other ECMP hash draws"
import json, sys
e = json.load(open(sys.argv[1]))
ib = json.load(open(sys.argv[2]))
o = e["other_ecmp_hash_step_time_s"]
assert len(o) == 2 and all(t > 0 for t in o), o
assert any(abs(t / e["step_time_s"] - 1) > 0.01 for t in o), (o, e["step_time_s"])  # another draw, another step
assert "other_ecmp_hash_step_time_s" not in ib
PY
"$bin" plan "$src/scenarios/roce-256gpu-ecmp.yaml" 2>/dev/null | grep -q "ECMP: the step above is one draw of the switches' hash" ||
  fail "plan text lacks the hash-draw line"

# A fabric that cannot be cabled still gets a plan (analytic, with the reason); --engine des
# alone refuses it with the fabric's error and exit 2.
f="$src/scenarios/seed/fat-tree-256gpu.yaml"
"$bin" plan "$f" --json >"$tmp/fb.json" 2>"$tmp/fb.err" || fail "plan on the seed fat-tree exited $?"
grep -q "analytic model used" "$tmp/fb.err" || fail "no fallback note on stderr"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['engine']=='analytic' and 'cannot host' in d['engine_note']" "$tmp/fb.json" || fail "fallback JSON"
"$bin" plan "$f" --engine des >/dev/null 2>"$tmp/fb.err"; rc=$?
[ "$rc" -eq 2 ] || fail "plan --engine des on an infeasible fabric exited $rc, want 2"
grep -q "fat-tree-256gpu.yaml:[0-9]*:[0-9]*: cluster.fabric" "$tmp/fb.err" || fail "no file:line:col in: $(cat "$tmp/fb.err")"
grep -q "yaml: .*fat-tree-256gpu.yaml" "$tmp/fb.err" && fail "the path is printed twice: $(cat "$tmp/fb.err")"
# --trace needs the simulation: with the default engine it does not fall back to the analytic
# model (that would claim a timeline it never wrote) but exits 2 with the reason, writing nothing.
"$bin" plan "$f" --trace "$tmp/fb-trace.json" >"$tmp/fb.out" 2>"$tmp/fb.err"; rc=$?
[ "$rc" -eq 2 ] || fail "plan --trace on an infeasible fabric exited $rc, want 2"
grep -q -- "--trace .*fb-trace.json: the step cannot be simulated: .*fat-tree-256gpu.yaml:[0-9]*:[0-9]*: cluster.fabric" "$tmp/fb.err" ||
  fail "plan --trace on an infeasible fabric: no reason in: $(cat "$tmp/fb.err")"
[ -e "$tmp/fb-trace.json" ] && fail "plan --trace wrote a trace of a step it could not simulate"
grep -q "Timeline" "$tmp/fb.out" && fail "plan --trace names a timeline it did not write"

# Interference (the scenario's interference: section): the simulator reports the step alone (the
# neighbour idle, no background) and with it, and the slowdown; the analytic model says plainly
# that it ignores it. Without the section there is no such report.
grep -q "^Interference" "$tmp/plan.txt" && fail "interference reported for a scenario without it"
grep -q '"interference"' "$tmp/des.json" && fail "interference key for a scenario without it"
f="$src/scenarios/ib-256gpu-neighbour-job.yaml"
"$bin" plan "$f" >"$tmp/nb.txt" 2>"$tmp/err.txt" || fail "plan $f exited $? ($(cat "$tmp/err.txt"))"
grep -q "^Interference: neighbour job of 32 nodes" "$tmp/nb.txt" || fail "no interference report"
grep -qE "step alone .*, with it .*: [0-9.]+x slower" "$tmp/nb.txt" || fail "no slowdown line"
"$bin" plan "$f" --json >"$tmp/nb.json" || fail "plan $f --json exited $?"
python3 - "$tmp/nb.json" <<'PY' || fail "interference JSON"
import json, sys
d = json.load(open(sys.argv[1]))
i = d["interference"]
assert d["engine"] == "des" and i["simulated"] is True, (d["engine"], i)
for k in ("step_s_alone", "step_s_with", "slowdown", "added_s", "what", "baseline"):
    assert k in i, k
assert i["step_s_with"] == d["step_time_s"], (i["step_s_with"], d["step_time_s"])
assert i["slowdown"] > 1.05, i["slowdown"]
assert abs(i["slowdown"] - i["step_s_with"] / i["step_s_alone"]) < 1e-9 * i["slowdown"]
assert abs(i["added_s"] - (i["step_s_with"] - i["step_s_alone"])) < 1e-9 * i["step_s_with"]
assert "neighbour job of 32 nodes" in i["what"] and "background" in i["what"], i["what"]
PY
"$bin" plan "$f" --engine analytic >"$tmp/nba.txt" || fail "plan $f --engine analytic exited $?"
[ "$(grep -c "ignores the scenario's interference" "$tmp/nba.txt")" -eq 1 ] ||
  fail "analytic plan does not say (once) that it ignores the interference"
"$bin" plan "$f" --engine analytic --json >"$tmp/nba.json" || fail "analytic --json exited $?"
python3 -c 'import json,sys; i=json.load(open(sys.argv[1]))["interference"]; assert i["simulated"] is False and "ignores" in i["note"] and "slowdown" not in i, i' \
  "$tmp/nba.json" || fail "analytic interference note in JSON"

# Every shipped scenario plans (exit 0, valid JSON); other YAML there (claims) is skipped. Under
# the sanitizers (CLUSTERSIM_TIME_SCALE above 1) the largest jobs plan with the formulas (1.6-3.2
# s each simulated in the optimised build, ten times that there): Qwen3-235B on its three
# fabrics (mixtral-8x22b-256xh100 simulates a MoE step there), DeepSeek-V3 on 2,048 H800, and
# the clusters of more than 2,048 nodes (Llama 3 405B at 64K and 128K; scale_cli simulates the
# 128K one there).
variants=" moe-qwen3-235b-256xh100-ib moe-qwen3-235b-256xh100-rail moe-qwen3-235b-256xh100-roce-ecmp deepseek-v3-2048xh800 "
for f in "$src"/scenarios/*.yaml "$src"/scenarios/seed/*.yaml "$src"/scenarios/examples/*.yaml; do
  grep -q '^cluster:' "$f" || continue
  engine=()
  if [ "${CLUSTERSIM_TIME_SCALE:-1}" -gt 1 ] &&
     { [[ "$variants" == *" $(basename "$f" .yaml) "* ]] || too_big_for_sanitizers "$f"; }; then
    engine=(--engine analytic)
  fi
  "$bin" plan "$f" "${engine[@]}" --json >"$tmp/s.json" 2>"$tmp/err.txt" ||
    fail "plan $f exited $? ($(cat "$tmp/err.txt"))"
  python3 -m json.tool "$tmp/s.json" >/dev/null || fail "plan $f --json is not valid JSON"
done

# A job that does not fit: the verdict in plain words and what to change.
sed -e 's/zero: 3/zero: 0/' -e 's/recompute: full/recompute: none/' \
  "$src/scenarios/examples/llama2-70b-zero3-full-recompute.yaml" >"$tmp/too-big.yaml"
if "$bin" plan "$tmp/too-big.yaml" >"$tmp/big.txt" 2>"$tmp/err.txt"; then
  grep -qF "DOES NOT FIT" "$tmp/big.txt" || fail "no DOES NOT FIT for a 70B job without ZeRO"
  grep -qF "(fits)" "$tmp/big.txt" || fail "no advice that fits for the too-big job"
else
  fail "plan too-big.yaml exited $? ($(cat "$tmp/err.txt"))"
fi
"$bin" plan "$tmp/too-big.yaml" --json >"$tmp/big.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["fits"] is False and d["memory_advice"], d["memory_advice"]' \
  "$tmp/big.json" || fail "--json of a job that does not fit"

# Bad input exits 2: a bad key names file:line:col; a missing file; an unknown flag.
cat >"$tmp/bad.yaml" <<'EOF'
name: bad
cluster:
  nodes: 4
  node:
    gpu: h100-sxm
    gpus_per_node: eight
EOF
"$bin" plan "$tmp/bad.yaml" >/dev/null 2>"$tmp/err.txt"; rc=$?
[ "$rc" -eq 2 ] || fail "bad scenario exited $rc, expected 2"
grep -qE "bad.yaml:6:[0-9]+: cluster.node.gpus_per_node" "$tmp/err.txt" ||
  fail "bad scenario message lacks file:line:col: $(cat "$tmp/err.txt")"
"$bin" plan "$tmp/no-such.yaml" >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "missing scenario exited $rc, expected 2"
"$bin" plan --bogus >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "--bogus exited $rc, expected 2"

# --set KEY=VALUE: the keys and errors of sweep --set; dp follows the GPU count as in sweep. A
# 70B run on 16 nodes instead of 8 equals the scenario edited by hand (and sweep's row).
s70b="$src/scenarios/llama3-70b-64xh100-ndr-rail.yaml"
expect_bad_set_keys plan "$s70b"
expect_bad plan "--set cluster.nodes=abc: cluster.nodes" "$s70b" --set cluster.nodes=abc
expect_bad plan "one value here" "$s70b" --set cluster.nodes=8,16
sed -e 's/^  nodes: 8/  nodes: 16/' -e 's/^    dp: 4/    dp: 8/' "$s70b" >"$tmp/16n.yaml"
"$bin" plan "$tmp/16n.yaml" --engine analytic --json >"$tmp/by-hand.json" || fail "plan 16n.yaml"
"$bin" plan "$s70b" --set cluster.nodes=16 --engine analytic --json >"$tmp/by-set.json" ||
  fail "plan --set cluster.nodes=16 exited $?"
"$bin" sweep "$s70b" --set cluster.nodes=16 --json >"$tmp/by-sweep.json" || fail "sweep 16 nodes"
python3 - "$tmp/by-hand.json" "$tmp/by-set.json" "$tmp/by-sweep.json" <<'PY' || fail "plan --set"
import json, sys
hand, byset, sweep = (json.load(open(p)) for p in sys.argv[1:4])
assert byset["gpus"] == 128 and byset["step_time_s"] == hand["step_time_s"], (byset, hand)
row = sweep["rows"][0]
assert abs(row["step_time_s"] - byset["step_time_s"]) < 1e-9 * byset["step_time_s"]
PY
# The others take it too: compare (every design), search, topo.
expect_bad_set_keys compare "$s70b" "$s70b"
expect_bad_set_keys search "$s70b"
expect_bad_set_keys topo "$s70b"
"$bin" topo "$s70b" --set cluster.nodes=16 --json >"$tmp/topo16.json" || fail "topo --set exited $?"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["nodes"] == 16 and d["gpus"] == 128, d' \
  "$tmp/topo16.json" || fail "topo --set cluster.nodes=16 did not apply"

# A PyTorch step on Hopper says which attention kernels it assumes and names flash2 (FlashAttention-2,
# what SDPA ran there before torch 2.9); with flash2 the ceilings printed are FA2's.
"$bin" plan "$src/scenarios/published/clustersim-h200/clustersim-h200-1.4b-s8k-b2.yaml" >"$tmp/pt.txt" 2>&1 ||
  fail "plan of a PyTorch H200 step exited $?"
grep -qF "before that it runs FlashAttention-2 (framework.attention: flash2, 58.5% of the rate forward)" "$tmp/pt.txt" ||
  fail "no flash2 hint in: $(grep -F 'attention' "$tmp/pt.txt" | head -3)"
"$bin" plan "$src/scenarios/published/other-labs/torchtitan-llama3.1-8b-8xh100-fsdp-eager.yaml" >"$tmp/fa2.txt" 2>&1 ||
  fail "plan of a flash2 row exited $?"
grep -qF "flash2 attention up to 40.1% forward / 38% backward" "$tmp/fa2.txt" ||
  fail "flash2 ceilings not printed: $(grep -F 'GEMMs at up' "$tmp/fa2.txt")"
grep -qF "before that it runs FlashAttention-2" "$tmp/fa2.txt" && fail "the flash2 hint printed for a flash2 row"

# A published layout that ran but does not fit the model says what let it fit (its not_modelled);
# one that fits says nothing of it.
"$bin" plan "$src/scenarios/published/nvidia-h100/llama3-t4-405b-8k-8192gpu.yaml" >"$tmp/l3.txt" 2>&1 ||
  fail "plan of the Llama 3 8,192-GPU row exited $?"
grep -qF "This layout ran as published (llama3-paper): it fits only with what the model does not have:" \
  "$tmp/l3.txt" || fail "no published-layout note in: $(grep -F 'FIT' "$tmp/l3.txt")"
grep -qF "Meta's pipeline schedule" "$tmp/l3.txt" || fail "the note lacks the run's not_modelled"
grep -qF "This layout ran as published" "$tmp/pt.txt" && fail "the published-layout note printed for a run that fits"
# A Megatron-Core layout string is echoed on the parallel line.
"$bin" plan "$src/scenarios/published/nvidia-moe/mbridge-26.08-gb200-deepseek-v3-256gpu-mxfp8.yaml" \
  --engine analytic >"$tmp/layout.txt" 2>&1 || fail "plan of the DeepSeek-V3 layout row exited $?"
grep -qF "pp 4 interleaved x4 (layout Et*4|(t*4|)*14tmL)" "$tmp/layout.txt" ||
  fail "no layout on the parallel line: $(grep -F 'parallel' "$tmp/layout.txt")"
grep -qF "(layout " "$tmp/pt.txt" && fail "a layout printed for a run without one"
# A step that fits while the allocator's cache would take the GPU past its capacity says so (device
# call 46: such steps moved by -15 to +23%); one with room to spare does not.
f="$src/scenarios/published/clustersim-h100/clustersim-h100-llama3-8b-8l-fused-s8k-b2-fsdp-compiled-float8.yaml"
"$bin" plan "$f" --engine analytic >"$tmp/cap.txt" 2>&1 || fail "plan of an allocator-bound step exited $?"
grep -qF "! more than the GPU holds: the allocator will free its cache and retry" "$tmp/cap.txt" ||
  fail "no allocator note in: $(grep -F 'allocator' "$tmp/cap.txt")"
"$bin" plan "$f" --engine analytic --json >"$tmp/cap.json" 2>/dev/null || fail "plan --json exited $?"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['fits'] and d['allocator_at_capacity']" \
  "$tmp/cap.json" || fail "allocator_at_capacity not set"
grep -qF "more than the GPU holds" "$tmp/pt.txt" && fail "the allocator note printed for a step with room"
finish plan_cli
