#!/usr/bin/env bash
# `clustersim collective`: nccl-tests columns, JSON, exit codes, and the published H100 figures
# through the command line (sources in tests/models/collective_model_test.cc).
# Usage: collective_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"

# A JSON sweep of one size; prints the row's field.
field() {  # field <json file> <key>
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rows"][0][sys.argv[2]])' "$1" "$2"
}
# within <value> <reference> <relative tolerance>
within() {
  python3 -c 'import sys; v,r,t=map(float,sys.argv[1:]); sys.exit(0 if abs(v/r-1)<=t else 1)' "$@"
}

# Human table: nccl-tests' header and columns, one row per size, the footer.
if "$bin" collective --op all_reduce --gpus 8 -b 8 -e 1M >"$tmp/ar.txt" 2>"$tmp/err.txt"; then
  for want in "size" "count" "type" "redop" "time" "algbw" "busbw" "# Avg bus bandwidth"; do
    grep -qF -- "$want" "$tmp/ar.txt" || fail "collective output lacks '$want'"
  done
  rows=$(grep -cv '^#' "$tmp/ar.txt")
  [ "$rows" -eq 18 ] || fail "8 B .. 1 MiB by 2 should give 18 rows, got $rows"
else
  fail "collective exited $? ($(cat "$tmp/err.txt"))"
fi

# JSON: the keys docs/scenario-format.md gives, a row per size, nccl-tests' count for all_gather.
if "$bin" collective --op all_gather --gpus 8 -b 1M -e 4M --json >"$tmp/ag.json"; then
  python3 - "$tmp/ag.json" <<'PY' || fail "collective --json content"
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("op", "gpus", "algorithm", "rows"):
    assert k in d, k
assert d["op"] == "all_gather" and d["gpus"] == 8, d
assert len(d["rows"]) == 3, len(d["rows"])
for r in d["rows"]:
    for k in ("size_bytes", "time_us", "algbw_GBps", "busbw_GBps", "algorithm", "protocol"):
        assert k in r, k
    # busbw = algbw x (n-1)/n for all_gather (nccl-tests).
    assert abs(r["busbw_GBps"] - r["algbw_GBps"] * 7 / 8) < 1e-9 * r["algbw_GBps"] + 1e-12, r
# all_gather's count column is per rank: 1 MiB of floats over 8 ranks.
assert d["rows"][0]["count"] == 1048576 // 4 // 8, d["rows"][0]["count"]
PY
else
  fail "collective --json exited $?"
fi

# One node of 8 x H100, 8 GiB all_reduce: NVLS ~480 GB/s busbw (nccl-tests #212/#290/#347),
# ring ~370 (#309), within 10%.
"$bin" collective --op all_reduce --gpus 8 -b 8G -e 8G --algo nvls --json >"$tmp/nvls.json" &&
  within "$(field "$tmp/nvls.json" busbw_GBps)" 480 0.10 ||
  fail "NVLS 8 GiB busbw $(field "$tmp/nvls.json" busbw_GBps) not within 10% of 480"
"$bin" collective --op all_reduce --gpus 8 -b 8G -e 8G --algo ring --json >"$tmp/ring.json" &&
  within "$(field "$tmp/ring.json" busbw_GBps)" 370 0.10 ||
  fail "ring 8 GiB busbw $(field "$tmp/ring.json" busbw_GBps) not within 10% of 370"
"$bin" collective --op all_reduce --gpus 8 -b 8G -e 8G --json >"$tmp/auto.json" &&
  [ "$(field "$tmp/auto.json" algorithm)" = nvls ] || fail "auto does not pick NVLS at 8 GiB"

# 8-byte all_reduce on 2 and 4 nodes: 24.7 and 34.5 us (nccl-tests #309), within 25%.
"$bin" collective --op all_reduce --gpus 16 -b 8 -e 8 --json >"$tmp/lat2.json" &&
  within "$(field "$tmp/lat2.json" time_us)" 24.7 0.25 ||
  fail "2-node 8 B latency $(field "$tmp/lat2.json" time_us) us not within 25% of 24.7"
"$bin" collective --op all_reduce --gpus 32 -b 8 -e 8 --json >"$tmp/lat4.json" &&
  within "$(field "$tmp/lat4.json" time_us)" 34.5 0.25 ||
  fail "4-node 8 B latency $(field "$tmp/lat4.json" time_us) us not within 25% of 34.5"

# Multi-node ring over 8 x 400G NDR: 380-396 GB/s per node (nccl-tests #290/#319), within 5%.
"$bin" collective --op all_reduce --gpus 32 -b 8G -e 8G --algo ring --json >"$tmp/mn.json" &&
  within "$(field "$tmp/mn.json" busbw_GBps)" 388 0.05 ||
  fail "4-node ring busbw $(field "$tmp/mn.json" busbw_GBps) not within 5% of 380-396"

# A scenario file, and every op runs.
for op in all_reduce all_gather reduce_scatter alltoall broadcast reduce sendrecv; do
  "$bin" collective --scenario "$src/scenarios/h200-8gpu.yaml" --op "$op" -b 1K -e 1G \
    >/dev/null 2>"$tmp/err.txt" || fail "--op $op exited $? ($(cat "$tmp/err.txt"))"
done

# --engine des: the flows simulated on the scenario's fabric. Uncontended (adaptive routing,
# non-blocking) it agrees with the formula within 5% at 4 GiB; ECMP on the same fabric loses
# bandwidth to collisions and names the tier where they happen.
eco="$src/scenarios/roce-256gpu-ecmp.yaml"
sed 's/routing: ecmp/routing: adaptive/' "$eco" >"$tmp/adaptive.yaml"
"$bin" collective --scenario "$tmp/adaptive.yaml" --gpus 64 --algo ring -b 4G -e 4G --engine des \
  --json >"$tmp/des_ad.json" || fail "collective --engine des exited $?"
within "$(field "$tmp/des_ad.json" busbw_GBps)" "$(field "$tmp/des_ad.json" analytic_busbw_GBps)" 0.05 ||
  fail "uncontended des busbw $(field "$tmp/des_ad.json" busbw_GBps) not within 5% of the formula's"
"$bin" collective --scenario "$eco" --gpus 64 --algo ring -b 4G -e 4G --engine des \
  --json >"$tmp/des_ecmp.json" || fail "collective --engine des (ecmp) exited $?"
python3 - "$tmp/des_ad.json" "$tmp/des_ecmp.json" <<'PY' || fail "ECMP collisions not shown"
import json, sys
ad = json.load(open(sys.argv[1]))
ec = json.load(open(sys.argv[2]))
assert ad["engine"] == "des" and ec["engine"] == "des", (ad["engine"], ec["engine"])
a, e = ad["rows"][0], ec["rows"][0]
assert e["busbw_GBps"] < 0.9 * a["busbw_GBps"], (e["busbw_GBps"], a["busbw_GBps"])
assert "spine" in e["busiest"], e["busiest"]
PY
"$bin" collective --scenario "$eco" --gpus 64 -b 64M -e 256M --engine des >"$tmp/des.txt" ||
  fail "collective --engine des (table) exited $?"
grep -q "simulator on the fabric (ecmp routing)" "$tmp/des.txt" || fail "des table header"
[ "$(grep -cv '^#' "$tmp/des.txt")" -eq 3 ] || fail "des table: 3 rows expected"
expect_bad_match collective "--engine" --engine sim  # unknown engine

# Draws of ECMP's hash: each row the median draw, every draw's busbw beside it (ascending); only
# the simulator on an ECMP fabric hashes.
"$bin" collective --scenario "$eco" --gpus 64 --algo ring -b 4G -e 4G --engine des --hash-draws 5 \
  --json >"$tmp/draws.json" || fail "collective --hash-draws exited $?"
python3 - "$tmp/draws.json" "$tmp/des_ecmp.json" <<'PY' || fail "hash draws"
import json, sys
d = json.load(open(sys.argv[1]))
one = json.load(open(sys.argv[2]))["rows"][0]
assert d["hash_draws"] == 5, d["hash_draws"]
r = d["rows"][0]
b = r["hash_draws_busbw_GBps"]
assert len(b) == 5 and b == sorted(b), b
assert abs(r["busbw_GBps"] - b[2]) < 1e-9, (r["busbw_GBps"], b)  # the median draw
assert any(abs(x - one["busbw_GBps"]) < 1e-9 for x in b), (one["busbw_GBps"], b)  # draw 0
assert b[0] < b[-1], b  # collisions depend on the hash
PY
expect_bad_match collective "--hash-draws.*ECMP" --hash-draws 3  # the formula draws nothing
expect_bad_match collective "--hash-draws" --scenario "$eco" --engine des --hash-draws 0

# Bad input exits 2 with a message that names the flag or the file:line:col.
expect_bad_match collective "--op" --op allsum  # unknown op
expect_bad_match collective "--algo" --algo fastest  # unknown algorithm
expect_bad_match collective "--proto" --proto ll64  # unknown protocol
expect_bad_match collective "--gpus.*32 GPUs" --gpus 33  # too many GPUs
expect_bad_match collective "--min" --min 8X  # bad size
expect_bad_match collective "minimum" --min 1G --max 1M  # min above max
expect_bad_match collective "all_reduce only" --op all_gather --algo tree  # tree all_gather
expect_bad_match collective "bogus" --bogus  # unknown flag
expect_bad_match collective "no-such.yaml" --scenario "$tmp/no-such.yaml"  # missing scenario
cat >"$tmp/bad.yaml" <<'EOF'
name: bad
cluster:
  nodes: 1
  node:
    gpu: h100-sxm
    gpus_per_node: 8
    scale_up: nvlink4
    nic_count: 8
EOF
expect_bad_match collective "bad.yaml:[0-9]+:[0-9]+" --scenario "$tmp/bad.yaml"  # bad scenario

finish collective_cli
