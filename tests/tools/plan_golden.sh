#!/usr/bin/env bash
# Golden tests: `clustersim plan --json` on the embedded default scenario, with each engine,
# against tests/golden/plan_default.json (analytic) and plan_default_des.json (the simulator,
# deterministic: fixed seeds): the same keys and strings, numbers within a relative 1e-4 (REL below).
# The des golden was reviewed against the analytic one: the same kernels (120.5 s) and TP
# (TP between the GEMMs), DP exposed less because the simulation lets a micro-batch's ZeRO-3
# gathers and reduce-scatters run under the neighbouring micro-batches' compute, which the
# formula adds serially; so it hides more, and the compute it slows (0.61 s per second of
# hidden collectives, Lee et al. 2025, step_model.h) is larger (analytic 72 s of 120 s hidden).
# The golden was reviewed by hand (forward 115 ms: 73 TFLOP of GEMMs at the 0.834 in-tile rate
# held to the power cap's clock, plus flash attention and the memory-bound kernels; ZeRO-3
# gather 3/4 x 17.2 GB / 47 GB/s = 275 ms; fp32 gradients 8.6 GB sharded by 4; optimizer 38
# bytes per parameter; checkpoint 966 GB / 50 GB/s = 19.3 s; the TP all_reduce of 32 MiB on 8
# GPUs, NVLS with its pipeline fill, 202 us: 8 x H100 measure 200 us, together-nccl-tests). When a model change
# moves it on purpose, regenerate it with `clustersim plan --engine analytic --json > tests/golden/plan_default.json`,
# read the diff, and say in the commit why each figure moved.
# Usage: plan_golden.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"

for pair in analytic:plan_default.json des:plan_default_des.json; do
engine="${pair%%:*}"
golden="${pair#*:}"
"$bin" plan --engine "$engine" --json >"$tmp/plan.json" ||
  { fail "plan --engine $engine --json exited $?"; continue; }
python3 - "$src/tests/golden/$golden" "$tmp/plan.json" <<'PY' || fail "plan --engine $engine --json differs from $golden"
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
    print(f"FAIL: plan --json differs from {sys.argv[1]}:", file=sys.stderr)
    for d in diffs:
        print("  " + d, file=sys.stderr)
    sys.exit(1)
print(f"plan_golden: {sys.argv[1].split('/')[-1]} ok")
PY
done
finish plan_golden
