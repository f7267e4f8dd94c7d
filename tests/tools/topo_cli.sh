#!/usr/bin/env bash
# `clustersim topo`: the summary on every scenario file, --json with the same figures, DOT and
# SVG pictures, the seed's infeasible 256-GPU leaf-spine explained, bad input exits 2.
# Usage: topo_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"

# Default (embedded) scenario: 4 nodes x 8 NDR NICs fit one 64-port switch.
if "$bin" topo >"$tmp/default.txt" 2>"$tmp/err.txt"; then
  for want in "design:  1 leaf, 32 NIC ports per leaf" "bisection, max-flow (node level)" \
              "800 GB/s = 100% of half the injection" "diameter" "cost: fabric total" \
              "no higher tier is needed"; do
    grep -qF -- "$want" "$tmp/default.txt" || fail "topo lacks '$want'"
  done
else
  fail "topo exited $? ($(cat "$tmp/err.txt"))"
fi

# Every scenario file prints a summary, except the seed's 8 x 32-port leaves + 2 spines with
# 8 NICs per node, which cannot be cabled: exit 2 with the shortfall and the alternatives.
while IFS= read -r f; do
  name="$(basename "$f")"
  grep -q '^cluster:' "$f" || continue  # not a scenario (claims, calibration overlays)
  too_big_for_sanitizers "$f" && continue
  "$bin" topo "$f" >"$tmp/out.txt" 2>"$tmp/err.txt"
  rc=$?
  if [ "$name" = "fat-tree-256gpu.yaml" ]; then
    [ "$rc" -eq 2 ] || fail "$name exited $rc, expected 2"
    for want in "fat-tree-256gpu.yaml:" "cluster.fabric.leaves" "short by 2 ports per leaf (16 in all)" \
                "what the same parts can do instead" "with 4 NICs per node" "(2:1)" \
                "with 2 NICs per node"; do
      grep -qF -- "$want" "$tmp/err.txt" || fail "$name error lacks '$want'"
    done
    # --nearest: the summary and picture of the fabric sized for every NIC, said to be that.
    "$bin" topo "$f" --nearest --svg "$tmp/nearest.svg" >"$tmp/out.txt" 2>"$tmp/err.txt" \
      || fail "$name --nearest exited $?"
    for want in "cannot be built; drawn instead: a 2-tier fat-tree" "16 leaves + 8 spines" \
                "bisection, max-flow"; do
      grep -qF -- "$want" "$tmp/out.txt" || fail "$name --nearest lacks '$want'"
    done
    grep -qF "short by 2 ports per leaf" "$tmp/err.txt" || fail "$name --nearest hides the error"
    if command -v dot >/dev/null; then
      grep -q "<svg" "$tmp/nearest.svg" || fail "$name --nearest wrote no SVG"
    fi
    "$bin" topo "$f" --nearest --json >"$tmp/near.json" 2>/dev/null || fail "$name --nearest --json"
    grep -qF '"drawn_instead_of_the_given_design"' "$tmp/near.json" || fail "$name --nearest JSON"
    continue
  fi
  [ "$rc" -eq 0 ] || { fail "$name exited $rc ($(head -c 400 "$tmp/err.txt"))"; continue; }
  grep -qF "design:" "$tmp/out.txt" || fail "$name: no design line"
  "$bin" topo "$f" --json >"$tmp/out.json" || fail "$name --json exited $?"
  python3 - "$tmp/out.json" "$tmp/out.txt" <<'PY' || fail "$name: --json disagrees with the table"
import json, sys
d = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
for k in ("scenario", "nodes", "gpus", "planes", "design", "tiers", "switches", "cables",
          "transceivers", "injection_Bps", "bisection_Bps", "diameter_hops", "latency_s",
          "cost_usd", "notes"):
    assert k in d, k
assert d["cables"] * 2 == d["transceivers"]
assert f"{d['diameter_hops']} hops" in text
if d["nodes"] >= 2:
    assert 0 < d["bisection_Bps"] <= d["injection_Bps"] / 2 * (1 + 1e-9)
    total = next(l for l in text.splitlines() if l.strip().startswith("total"))
    assert str(d["switches"]) in total.split(), (total, d["switches"])
PY
done < <(find "$src/scenarios" -maxdepth 2 -name '*.yaml' -not -path '*/measurements/*' | sort)

# Figures of a known design: 32 nodes x 8 NDR NICs, 64-port switches: 8 leaves + 4 spines, 1:1.
"$bin" topo "$src/scenarios/ib-256gpu.yaml" --json >"$tmp/ib.json" || fail "ib-256gpu --json exited $?"
python3 - "$tmp/ib.json" <<'PY' || fail "ib-256gpu figures"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["switches"] == 12, d["switches"]
assert d["design"]["leaves_per_plane"] == 8 and d["design"]["spines_per_plane"] == 4, d["design"]
assert d["cables"] == 256 + 256, d["cables"]
assert abs(d["bisection_Bps"] - 128 * 50e9) < 1e6, d["bisection_Bps"]
assert d["diameter_hops"] == 8
PY

# Pictures: DOT always; SVG through Graphviz when it is installed.
"$bin" topo "$src/scenarios/ib-256gpu.yaml" --dot "$tmp/ib.dot" >/dev/null || fail "--dot exited $?"
head -n 1 "$tmp/ib.dot" | grep -q "^graph cluster" || fail "--dot did not write a DOT graph"
grep -qF "n28-n31" "$tmp/ib.dot" || fail "collapsed DOT lacks the per-leaf node box"
"$bin" topo "$src/scenarios/seed/interconnect-400g-ib.yaml" --full --dot "$tmp/full.dot" >/dev/null \
  || fail "--full --dot exited $?"
grep -qF "n3.gpu7" "$tmp/full.dot" || fail "--full DOT lacks GPUs"
if command -v dot >/dev/null; then
  "$bin" topo "$src/scenarios/ib-256gpu.yaml" --svg "$tmp/ib.svg" >/dev/null || fail "--svg exited $?"
  grep -q "<svg" "$tmp/ib.svg" || fail "--svg did not write SVG"
else
  "$bin" topo --svg "$tmp/x.svg" >/dev/null 2>"$tmp/err.txt"; rc=$?
  [ "$rc" -eq 2 ] || fail "--svg without Graphviz exited $rc, expected 2"
  grep -qF "Graphviz is not installed" "$tmp/err.txt" || fail "--svg without Graphviz: no clear message"
fi

# Bad input exits 2.
"$bin" topo "$tmp/missing.yaml" >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "missing file exited $rc, expected 2"
"$bin" topo --bogus >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "--bogus exited $rc, expected 2"
"$bin" topo --dot "$tmp/no/such/dir/x.dot" >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "unwritable --dot exited $rc, expected 2"

finish topo_cli
