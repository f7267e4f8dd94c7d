#!/usr/bin/env bash
# Golden test: `clustersim plan --json` on the embedded default scenario against
# tests/golden/plan_default.json: the same keys and strings, numbers within a relative 1e-4.
# The golden was reviewed by hand (forward 118 ms = 73 TFLOP at ~655 TFLOP/s; ZeRO-3 gather
# 3/4 x 17.2 GB / 47 GB/s = 275 ms; checkpoint 966 GB / 50 GB/s = 19.3 s). When a model change
# moves it on purpose, regenerate it with `clustersim plan --json > tests/golden/plan_default.json`,
# read the diff, and say in the commit why each figure moved.
# Usage: plan_golden.sh <clustersim binary> <source dir>
set -u
bin="$1"
src="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$bin" plan --json >"$tmp/plan.json" || { echo "FAIL: plan --json exited $?" >&2; exit 1; }
python3 - "$src/tests/golden/plan_default.json" "$tmp/plan.json" <<'PY'
import json, math, sys

REL = 1e-4
ABS = 1e-12

def compare(want, got, path, out):
    if isinstance(want, dict):
        if not isinstance(got, dict):
            out.append(f"{path}: expected an object, got {got!r}")
            return
        for k in sorted(set(want) | set(got)):
            if k not in got:
                out.append(f"{path}.{k}: missing")
            elif k not in want:
                out.append(f"{path}.{k}: not in the golden file ({got[k]!r})")
            else:
                compare(want[k], got[k], f"{path}.{k}", out)
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            out.append(f"{path}: expected a list of {len(want)}, got {got!r}")
            return
        for i, (w, g) in enumerate(zip(want, got)):
            compare(w, g, f"{path}[{i}]", out)
    elif isinstance(want, bool) or want is None or isinstance(want, str):
        if want != got:
            out.append(f"{path}: expected {want!r}, got {got!r}")
    elif isinstance(want, (int, float)):
        if not isinstance(got, (int, float)) or isinstance(got, bool) or \
                not math.isclose(want, got, rel_tol=REL, abs_tol=ABS):
            out.append(f"{path}: expected {want!r}, got {got!r}")
    else:
        out.append(f"{path}: unexpected golden value {want!r}")

want = json.load(open(sys.argv[1]))
got = json.load(open(sys.argv[2]))
diffs = []
compare(want, got, "plan", diffs)
if diffs:
    print("FAIL: plan --json differs from tests/golden/plan_default.json:", file=sys.stderr)
    for d in diffs:
        print("  " + d, file=sys.stderr)
    sys.exit(1)
print("plan_golden: ok")
PY
