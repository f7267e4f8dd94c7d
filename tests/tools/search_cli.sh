#!/usr/bin/env bash
# `clustersim search`: the ranked table and why #1 wins, the JSON, the winner planned by `plan`
# gives the same step, threads do not change the ranking, --gpus, --gpus-range (the smallest
# count that fits is the smallest: one node fewer does not fit), --refine-des, a job that fits
# nowhere, a scenario whose own layout does not divide its cluster, and bad input exiting 2.
# Usage: search_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"
s8b="$src/scenarios/llama3-8b-8xh100.yaml"
s70b="$src/scenarios/llama3-70b-64xh100-ndr-rail.yaml"
s1m="$src/scenarios/seed/context-1m-1024gpu.yaml"

# Human report: the ranking, the scenario's own layout, why #1 wins, the YAML to paste.
if "$bin" search "$s8b" --top 5 >"$tmp/out.txt" 2>"$tmp/err.txt"; then
  for want in "Parallelism search for llama3-8b-on-8-h100" "valid layouts" "fit in memory" \
              "tokens/s" "MFU" "memory of 80 GiB" "per M tokens" "own #" \
              "Why #1 wins: where each step goes" "compute" "faster than the scenario's own" \
              "Use it (under workload:)" "parallelism: {tp: 1"; do
    grep -qF -- "$want" "$tmp/out.txt" || fail "search output lacks '$want'"
  done
  # How far the corpus's runs of this kind were off (the line wraps: compared on one line).
  tr -s ' \n' ' ' <"$tmp/out.txt" | grep -qE "Accuracy: on the corpus's [0-9]+ published Hopper \
dense, one node runs the analytic model is off by [0-9.]+% \(median\)" ||
    fail "search output lacks the accuracy of runs of its kind"
  [ "$(grep -cE '^  [0-9]+ ' "$tmp/out.txt")" -eq 5 ] || fail "--top 5 did not list 5 layouts"
else
  fail "search exited $? ($(cat "$tmp/err.txt"))"
fi

# JSON; the winner, written into the scenario and planned by `plan --engine analytic`, gives the
# step time the search reported.
"$bin" search "$s8b" --json --top 20 >"$tmp/8b.json" 2>"$tmp/err.txt" || fail "search --json exited $?"
python3 - "$tmp/8b.json" "$s8b" "$tmp/best.yaml" <<'PY' || fail "search --json content"
import json, sys, yaml
d = json.load(open(sys.argv[1]))
assert d["scenario"] == "llama3-8b-on-8-h100" and d["gpus"] == 8 and d["engine"] == "analytic"
assert d["objective"] == "tokens_per_s"
assert d["layouts"] > d["fitting"] > 0 and d["failed"] == 0
top = d["top"]
assert len(top) == 20
assert all(a["score"] >= b["score"] for a, b in zip(top, top[1:]))
for t in top:
    assert t["fits"] and t["memory_per_gpu_bytes"] <= t["memory_capacity_bytes"] == 80 * 2**30
    l = t["layout"]
    assert l["tp"] * l["pp"] * l["dp"] * l["cp"] == 8
    assert abs(t["tokens_per_s"] * t["step_time_s"] - 256 * 8192) < 1e-6 * 256 * 8192
best = top[0]["layout"]
assert best["tp"] <= 2 and best["dp"] >= 4 and best["zero"] >= 1, best  # data parallel + ZeRO
assert d["own_rank"] >= 1 and d["own"]["layout"]["dp"] == 8
assert d["best_other_shape"]["layout"] != best
sc = yaml.safe_load(open(sys.argv[2]))
sc["workload"]["micro_batch"] = best.pop("micro_batch")
sc["workload"]["parallelism"] = best
yaml.safe_dump(sc, open(sys.argv[3], "w"))
open(sys.argv[3] + ".step", "w").write(repr(top[0]["step_time_s"]))
PY
"$bin" plan "$tmp/best.yaml" --engine analytic --json >"$tmp/plan.json" 2>"$tmp/err.txt" ||
  fail "plan of the winner exited $? ($(cat "$tmp/err.txt"))"
python3 -c '
import json, sys
plan = json.load(open(sys.argv[1])); want = float(open(sys.argv[2]).read())
assert abs(plan["step_time_s"] - want) < 1e-9 * want, (plan["step_time_s"], want)
' "$tmp/plan.json" "$tmp/best.yaml.step" || fail "plan of the winner disagrees with the search"

# One thread or three: the same ranking.
"$bin" search "$s70b" --json --top 30 --threads 1 >"$tmp/t1.json" || fail "--threads 1 exited $?"
"$bin" search "$s70b" --json --top 30 --threads 3 >"$tmp/t3.json" || fail "--threads 3 exited $?"
python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert [t["layout"] for t in a["top"]] == [t["layout"] for t in b["top"]]
assert [t["score"] for t in a["top"]] == [t["score"] for t in b["top"]]
assert a["layouts"] == b["layouts"] and a["fitting"] == b["fitting"] and a["threads"] == 1 and b["threads"] == 3
' "$tmp/t1.json" "$tmp/t3.json" || fail "threads changed the ranking"

# --gpus: the same nodes at another count.
"$bin" search "$s70b" --gpus 128 --json >"$tmp/g128.json" || fail "--gpus 128 exited $?"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["gpus"] == 128 and d["top"][0]["gpus"] == 128' \
  "$tmp/g128.json" || fail "--gpus 128 JSON"

# How many GPUs for the seed's million-token context: the smallest count that fits, and one node
# fewer does not fit (--gpus at that count finds nothing).
"$bin" search "$s1m" --gpus-range 8:2048 --json >"$tmp/1m.json" 2>"$tmp/err.txt" ||
  fail "--gpus-range exited $? ($(cat "$tmp/err.txt"))"
smallest=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
n = d["smallest_fitting_gpus"]
assert 8 < n <= 2048, n
gpus = [c["gpus"] for c in d["counts"]]
assert gpus == sorted(gpus) and gpus[0] == 8 and gpus[-1] == 2048 and n in gpus, gpus
for c in d["counts"]:
    assert (c["best"] is not None) == (c["fitting"] > 0)
    if c["gpus"] < n: assert c["best"] is None and c["closest"]["memory_per_gpu_bytes"] > d["memory_capacity_bytes"]
    if c["gpus"] == n: assert c["best"]["fits"]
assert d["best_gpus"] == 2048  # fastest: the most GPUs
print(n)' "$tmp/1m.json") || fail "--gpus-range JSON"
if [ -n "$smallest" ]; then
  "$bin" search "$s1m" --gpus $((smallest - 8)) --json >"$tmp/below.json" || fail "--gpus below exited $?"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["fitting"] == 0 and d["top"] == [] and (d["layouts"] == 0 or d["closest"])' \
    "$tmp/below.json" || fail "one node below the smallest fitting count still fits"
fi
"$bin" search "$s1m" --gpus-range 8:2048 >"$tmp/1m.txt" || fail "--gpus-range (table) exited $?"
grep -q "Smallest count that fits in 80 GiB per GPU: $smallest GPUs" "$tmp/1m.txt" ||
  fail "range report lacks the smallest count: $(head -8 "$tmp/1m.txt")"
grep -qF "Best layout per GPU count" "$tmp/1m.txt" || fail "range report lacks the table"
# The cheapest count is never above the fastest one.
"$bin" search "$s1m" --gpus-range 8:2048 --objective cost --json >"$tmp/cost.json" || fail "--objective cost exited $?"
python3 -c '
import json, sys
c, f = (json.load(open(p)) for p in sys.argv[1:3])
assert c["objective"] == "cost" and c["best_gpus"] <= f["best_gpus"], (c["best_gpus"], f["best_gpus"])
' "$tmp/cost.json" "$tmp/1m.json" || fail "cost objective across counts"

# --refine-des: the first layouts simulated (one node: fast), re-ranked by the simulated score.
"$bin" search "$s8b" --refine-des 2 --top 3 --json >"$tmp/des.json" 2>"$tmp/des.err" || fail "--refine-des exited $?"
grep -q "simulated 1/2" "$tmp/des.err" || fail "--refine-des reports no progress on stderr"
python3 - "$tmp/des.json" <<'PY' || fail "--refine-des JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["engine"] == "analytic+des"
top = d["top"]
assert len(top) == 3 and "des" in top[0] and "des" in top[1] and "des" not in top[2]
assert top[0]["des"]["score"] >= top[1]["des"]["score"]
assert sorted(t["analytic_rank"] for t in top[:2]) == [1, 2]
for t in top[:2]:
    assert 0.8 < t["des"]["step_time_s"] / t["step_time_s"] < 1.25
PY

# A job that fits nowhere on its cluster: said plainly, with the closest layout; exit 0.
sed 's/model: llama3-8b/model: llama3-70b/' "$s8b" >"$tmp/70b-one-node.yaml"
"$bin" search "$tmp/70b-one-node.yaml" >"$tmp/none.txt" 2>&1 || fail "search (nothing fits) exited $?"
grep -qF "Nothing fits in 80 GiB per GPU on 8 GPUs" "$tmp/none.txt" || fail "no 'Nothing fits': $(cat "$tmp/none.txt")"
grep -qF -- "--gpus-range" "$tmp/none.txt" || fail "no hint to search more GPUs"

# The scenario's own layout no longer divides its cluster (16 nodes, dp 4): still searched.
sed 's/^  nodes: 8/  nodes: 16/' "$s70b" >"$tmp/16n.yaml"
"$bin" plan "$tmp/16n.yaml" --engine analytic >/dev/null 2>&1 && fail "plan accepted a layout that does not divide"
"$bin" search "$tmp/16n.yaml" --json >"$tmp/16n.json" 2>"$tmp/err.txt" || fail "search of 16n exited $? ($(cat "$tmp/err.txt"))"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["gpus"] == 128 and d["own"] is None and d["top"]' \
  "$tmp/16n.json" || fail "search of a scenario with an invalid own layout"

# Bad input exits 2 and names the flag.
expect_bad search "--objective" "$s8b" --objective speed
expect_bad search "--gpus 12" "$s8b" --gpus 12
expect_bad search "--gpus-range" "$s70b" --gpus-range 64
expect_bad search "--gpus-range" "$s70b" --gpus-range 128:64
expect_bad search "whole nodes" "$s70b" --gpus-range 60:128
expect_bad search "excludes" "$s70b" --gpus 64 --gpus-range 64:128
expect_bad search "--refine-des" "$s70b" --gpus-range 64:128 --refine-des 2
expect_bad search "--top" "$s8b" --top 0
expect_bad search "need NICs" "$s8b" --gpus 16
expect_bad search "no-such.yaml" "$tmp/no-such.yaml"

finish search_cli
