#!/usr/bin/env bash
# `clustersim sweep`: a grid over --set keys (table, JSON, CSV shape), dp following the GPU count,
# keys varied together with +, invalid combinations reported per row (citing the --set), each row
# equal to `plan` of the same edit, --search per row, the simulator, the same rows on any number
# of threads, and bad keys or flags exiting 2 with the key named.
# Usage: sweep_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"
s70b="$src/scenarios/llama3-70b-64xh100-ndr-rail.yaml"
s8b="$src/scenarios/llama3-8b-8xh100.yaml"
net="cluster.node.nic+cluster.fabric.switch+cluster.fabric.in_network_reduction"
nets="ib-ndr+quantum-2-qm9700+true,roce-400+spectrum-4-sn5600-2x400g+false"

# A 2 x 3 grid, last --set fastest: table, CSV and JSON agree.
if "$bin" sweep "$s70b" --set "$net=$nets" --set cluster.nodes=4,8,16 --csv "$tmp/grid.csv" \
    >"$tmp/grid.txt" 2>"$tmp/err.txt"; then
  for want in "Sweep of llama3-70b-on-64-h100-ndr-rail" "6 combinations" "nic" "switch" "nodes" \
              "GPUs" "step" "tokens/s" "MFU" "exposed comm" "per M tokens" "dp follows the GPU count" \
              "rows written to"; do
    grep -qF -- "$want" "$tmp/grid.txt" || fail "sweep output lacks '$want'"
  done
else
  fail "sweep exited $? ($(cat "$tmp/err.txt"))"
fi
python3 - "$tmp/grid.csv" <<'PY' || fail "CSV shape"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
header, body = rows[0], rows[1:]
assert header[:4] == ["cluster.node.nic", "cluster.fabric.switch",
                      "cluster.fabric.in_network_reduction", "cluster.nodes"], header
for col in ("gpus", "tp", "pp", "dp", "cp", "step_time_s", "tokens_per_s", "mfu",
            "memory_per_gpu_bytes", "fits", "usd_per_million_tokens", "derived", "error"):
    assert col in header, col
assert len(body) == 6 and all(len(r) == len(header) for r in body), [len(r) for r in body]
h = {name: i for i, name in enumerate(header)}
assert [r[h["cluster.nodes"]] for r in body] == ["4", "8", "16"] * 2
assert [r[h["cluster.node.nic"]] for r in body] == ["ib-ndr"] * 3 + ["roce-400"] * 3
for r in body:
    assert r[h["error"]] == "", r
    nodes = int(r[h["cluster.nodes"]])
    assert int(r[h["gpus"]]) == 8 * nodes
    assert int(r[h["dp"]]) == 8 * nodes // 16  # tp 8 x pp 2: dp follows the GPU count
    assert (r[h["derived"]] == "") == (nodes == 8), r[h["derived"]]
    assert abs(float(r[h["tokens_per_s"]]) * float(r[h["step_time_s"]]) - 512 * 8192) < 1e-4 * 512 * 8192
# More nodes, more tokens/s.
for nic in ("ib-ndr", "roce-400"):
    tps = [float(r[h["tokens_per_s"]]) for r in body if r[h["cluster.node.nic"]] == nic]
    assert tps == sorted(tps), tps
PY
"$bin" sweep "$s70b" --set "$net=$nets" --set cluster.nodes=4,8,16 --json >"$tmp/grid.json" ||
  fail "sweep --json exited $?"
python3 - "$tmp/grid.json" "$tmp/grid.csv" <<'PY' || fail "sweep --json content"
import csv, json, sys
d = json.load(open(sys.argv[1]))
assert d["combinations"] == 6 and d["valid"] == 6 and d["engine"] == "analytic"
assert d["keys"] == ["cluster.node.nic", "cluster.fabric.switch",
                     "cluster.fabric.in_network_reduction", "cluster.nodes"]
rows = d["rows"]
assert rows[0]["values"] == {"cluster.node.nic": "ib-ndr", "cluster.fabric.switch": "quantum-2-qm9700",
                             "cluster.fabric.in_network_reduction": "true", "cluster.nodes": "4"}
assert rows[0]["derived"] == {"workload.parallelism.dp": "2"} and rows[1]["derived"] == {}
body = list(csv.DictReader(open(sys.argv[2])))
for j, c in zip(rows, body):
    assert j["ok"] and j["error"] is None
    assert abs(j["step_time_s"] - float(c["step_time_s"])) < 1e-5 * j["step_time_s"]
PY

# A row equals `plan` of the same scenario edited by hand.
sed -e 's/^  nodes: 8/  nodes: 16/' -e 's/^    dp: 4/    dp: 8/' "$s70b" >"$tmp/16n.yaml"
"$bin" plan "$tmp/16n.yaml" --engine analytic --json >"$tmp/plan16.json" || fail "plan 16 nodes exited $?"
python3 -c '
import json, sys
grid, plan = (json.load(open(p)) for p in sys.argv[1:3])
row = grid["rows"][2]
assert row["values"]["cluster.nodes"] == "16" and row["values"]["cluster.node.nic"] == "ib-ndr"
assert abs(row["step_time_s"] - plan["step_time_s"]) < 1e-9 * plan["step_time_s"], (row["step_time_s"], plan["step_time_s"])
' "$tmp/grid.json" "$tmp/plan16.json" || fail "sweep row disagrees with plan"

# Invalid combinations are rows, not failures; the message cites the --set that caused it.
"$bin" sweep "$s70b" --set workload.parallelism.tp=8,16 --set cluster.nodes=8,abc --json \
  >"$tmp/inv.json" 2>"$tmp/err.txt" || fail "sweep with invalid rows exited $? ($(cat "$tmp/err.txt"))"
python3 - "$tmp/inv.json" <<'PY' || fail "invalid rows"
import json, sys
d = json.load(open(sys.argv[1]))
ok = [r["ok"] for r in d["rows"]]
assert ok == [True, False, False, False], ok
errors = [r["error"] for r in d["rows"][1:]]
assert errors[0].startswith("--set cluster.nodes=abc: cluster.nodes: "), errors[0]
assert errors[1].startswith("--set workload.parallelism.tp=16: workload.parallelism.tp: tp 16 exceeds gpus_per_node 8"), errors[1]
assert d["valid"] == 1
PY
"$bin" sweep "$s70b" --set workload.parallelism.tp=16 >"$tmp/inv.txt" 2>"$tmp/err.txt"; rc=$?
[ "$rc" -eq 2 ] || fail "a sweep with no valid row exited $rc, want 2"
grep -qF "no combination is valid" "$tmp/err.txt" || fail "no 'no combination is valid': $(cat "$tmp/err.txt")"
grep -qF "invalid: --set workload.parallelism.tp=16" "$tmp/inv.txt" || fail "invalid row not shown in the table"

# --search: each row with its own best layout (the scenario's layout does not divide 16 GPUs).
"$bin" sweep "$s70b" --set cluster.nodes=2,8 --search --json >"$tmp/search.json" || fail "--search exited $?"
"$bin" search "$s70b" --json --top 1 >"$tmp/best64.json" || fail "search exited $?"
python3 -c '
import json, sys
d, s = (json.load(open(p)) for p in sys.argv[1:3])
assert d["search"] and d["valid"] == 2
small, big = d["rows"]
L = small["layout"]
assert small["gpus"] == 16 and small["fits"] and L["tp"] * L["pp"] * L["dp"] * L["cp"] == 16
assert small["memory_per_gpu_bytes"] <= small["memory_capacity_bytes"]
assert big["layout"] == s["top"][0]["layout"] and abs(big["step_time_s"] - s["top"][0]["step_time_s"]) < 1e-9 * big["step_time_s"]
' "$tmp/search.json" "$tmp/best64.json" || fail "--search rows"

# The simulator per row (one node: fast), and threads do not change the rows.
"$bin" sweep "$s8b" --set workload.parallelism.zero=1,3 --engine des --json >"$tmp/des.json" ||
  fail "--engine des exited $?"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["engine"] == "des" and d["valid"] == 2
for r in d["rows"]: assert 0.8 < r["step_time_s"] / r["analytic_step_time_s"] < 1.25
' "$tmp/des.json" || fail "--engine des rows"
for t in 1 3; do
  "$bin" sweep "$s70b" --set cluster.nodes=4,8,16,32 --set workload.seq_len=4096,8192 --threads $t \
    --json >"$tmp/th$t.json" || fail "--threads $t exited $?"
done
python3 -c '
import json, sys
a, b = (json.load(open(p))["rows"] for p in sys.argv[1:3])
assert len(a) == 8 and a == b
' "$tmp/th1.json" "$tmp/th3.json" || fail "threads changed the rows"

# Owning vs renting per row (issue 13): the CSV's owned and rented $/M tokens and break-even, the
# table's "owned" column and each JSON row's ownership. Half the utilization spreads the fixed
# costs (capital, colocation, support, staff) over fewer worked hours: a dearer owned (and
# reserved) token, the on-demand one unchanged. A scenario without a cost: section leaves the columns empty.
"$bin" sweep "$s70b" --set cost.utilization=0.4,0.8 --csv "$tmp/own.csv" >"$tmp/own.txt" ||
  fail "sweep --set cost.utilization exited $?"
grep -q ' owned ' "$tmp/own.txt" || fail "the table has no owned column"
"$bin" sweep "$s70b" --set cost.utilization=0.4,0.8 --json >"$tmp/own.json" || fail "--json exited $?"
h200="$src/scenarios/published/clustersim-h200/clustersim-h200-134m-s2k-b8.yaml"
"$bin" sweep "$h200" --set workload.seq_len=2048,4096 --csv "$tmp/noown.csv" >"$tmp/noown.txt" ||
  fail "sweep without cost: exited $?"
python3 - "$tmp/own.csv" "$tmp/own.json" "$tmp/noown.csv" "$tmp/noown.txt" <<'PY' || fail "sweep ownership"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["cost.utilization"] for r in rows] == ["0.4", "0.8"], rows
low, high = (float(r["owned_usd_per_million_tokens"]) for r in rows)
assert low > 1.5 * high, (low, high)  # mostly fixed costs: nearly 2x at half the use
# On demand is paid by the hour worked; a reservation every hour, used or not.
assert rows[0]["on_demand_usd_per_million_tokens"] == rows[1]["on_demand_usd_per_million_tokens"]
for k in ("reserved_1y_usd_per_million_tokens", "reserved_3y_usd_per_million_tokens"):
    assert float(rows[0][k]) > float(rows[1][k]) > 0, k
assert 0 < float(rows[0]["breakeven_utilization"]) < 1
j = json.load(open(sys.argv[2]))["rows"]
assert abs(j[0]["ownership"]["usd_per_million_tokens"]["owned"] - low) <= 1e-5 * low, j[0]["ownership"]
none = list(csv.DictReader(open(sys.argv[3])))
assert len(none) == 2 and all(r["owned_usd_per_million_tokens"] == "" for r in none), none
assert " owned " not in open(sys.argv[4]).read()
PY

# Bad keys and flags exit 2 and name the key.
expect_bad_set_keys sweep "$s70b"
expect_bad sweep "cluster.nodez: unknown key 'nodez' in cluster (did you mean 'nodes'?" "$s70b" --set cluster.nodez=4,8
expect_bad sweep "expected key=v1,v2" "$s70b" --set cluster.nodes
expect_bad sweep "an empty value" "$s70b" --set cluster.nodes=4,,8
expect_bad sweep "gives 2 values for 3 keys" "$s70b" --set "$net=ib-ndr+quantum-2-qm9700"
expect_bad sweep "--engine" "$s70b" --set cluster.nodes=8 --engine fast
expect_bad sweep "--csv" "$s70b" --set cluster.nodes=8 --csv "$tmp/no-such-dir/x.csv"
expect_bad sweep "--set" "$s70b"
expect_bad sweep "no-such.yaml" "$tmp/no-such.yaml" --set cluster.nodes=8

finish sweep_cli
