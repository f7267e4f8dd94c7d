#!/usr/bin/env bash
# The simulator at the cluster sizes users plan for (issue 11): one step with contention,
# `plan --engine des`, on 65,536 and 131,072 GPUs (three tiers of 128-port switches with ECMP,
# and a rail-optimized fabric) within the targets on a 2-core machine: <= 5 s at 65,536, <= 10 s
# and <= 4 GB at 131,072 (measured 0.44 s / 218 MB and 0.83 s / 403 MB). The simulated step
# moves little with the cluster (DP over more nodes): within 10% of the 16,384-GPU step.
# Usage: scale_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"

# Time limits are the optimised build's, times CLUSTERSIM_TIME_SCALE (the sanitizer build's).
run() {  # run SCENARIO LIMIT_S LIMIT_GB: plan --engine des --json into $tmp/out.json, timed
  python3 - "$bin" "$1" "$2" "$3" "$tmp/out.json" "${CLUSTERSIM_TIME_SCALE:-1}" <<'PY' || fail "plan --engine des $1 over its limits"
import json, resource, subprocess, sys, time
binary, scenario, limit_s, limit_gb, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
limit_s *= float(sys.argv[6])
t0 = time.time()
p = subprocess.run([binary, "plan", scenario, "--engine", "des", "--json"], capture_output=True, text=True)
wall = time.time() - t0
rss_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / 1e9
assert p.returncode == 0, p.stderr
open(out, "w").write(p.stdout)
print(f"{scenario}: {wall:.2f} s, {rss_gb:.2f} GB peak")
assert wall <= limit_s, f"{wall:.1f} s > {limit_s} s"
assert rss_gb <= limit_gb, f"{rss_gb:.2f} GB > {limit_gb} GB"
PY
}
step() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_s"])' "$tmp/out.json"; }

run "$src/scenarios/llama3-405b-16k-h100.yaml" 2 4
base=$(step)
# Under the sanitizers (CLUSTERSIM_TIME_SCALE above 1, 20-40 s a run there) only the largest
# ECMP fabric runs; the 65,536-GPU one is the same code, smaller, and plan_cli simulates a
# rail-optimized fabric (llama3-70b-64xh100-ndr-rail) under them.
sizes=(llama3-405b-64k-h100 llama3-405b-128k-h100 llama3-405b-128k-rail-h100)
[ "${CLUSTERSIM_TIME_SCALE:-1}" -gt 1 ] && sizes=(llama3-405b-128k-h100)
for f in "${sizes[@]}"; do
  limit=10
  [ "$f" = llama3-405b-64k-h100 ] && limit=5
  run "$src/scenarios/$f.yaml" "$limit" 4
  s=$(step)
  python3 -c "import sys; b, s = float(sys.argv[1]), float(sys.argv[2]); assert abs(s / b - 1) < 0.10, (b, s)" "$base" "$s" ||
    fail "$f: step $s s is not within 10% of the 16,384-GPU step $base s"
done

finish scale_cli
