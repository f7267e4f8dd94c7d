#!/usr/bin/env bash
# Issue 7, after the 8-GPU device call (run_on_device.sh x8), here without a GPU: calibrate on
# the small machine's files alone and on the 8-GPU file, and check the 8-GPU measurements
# against the uncalibrated model, the transfer from the small files, and the 8-GPU calibration
# (in sample, and cross-validated on every other size); verify the file.
#   bash validate/device/after_x8.sh CLUSTERSIM EIGHT_GPU.json OUT_DIR SMALL.json...
# e.g. bash validate/device/after_x8.sh build/tools/clustersim \
#        scenarios/measurements/h200-8gpu.json /tmp/x8 \
#        scenarios/measurements/h200-1gpu.json scenarios/measurements/h200-2gpu.json
# Writes under OUT_DIR: small.yaml, eight.yaml (the overlays), check-{uncalibrated,transfer,own,
# holdout}.json, verify.txt, and summary.txt (per collective of the 8-GPU file: median and max
# |error| over 64 KiB - 8 GiB of each prediction, and what predicted it). Exit 0 when every
# collective's median after the 8-GPU calibration is at most 5% (issue 7's gate) and verify does
# not FAIL; 1 otherwise; 2 on bad arguments.
set -u
if [ $# -lt 4 ]; then
  sed -n '2,15p' "$0" >&2
  exit 2
fi
bin=$1 eight=$2 out=$3
shift 3
mkdir -p "$out"
sizes=64KiB:8GiB
status=0

"$bin" calibrate "$@" -o "$out/small.yaml" >"$out/calibrate-small.txt" || exit 2
"$bin" calibrate "$eight" -o "$out/eight.yaml" >"$out/calibrate-eight.txt" || exit 2
# check exits 1 only for an impossible row or a missed gate (none given here).
check() {
  local name=$1
  shift
  "$bin" check "$eight" --sizes "$sizes" --json "$@" >"$out/check-$name.json"
  local rc=$?
  [ $rc -le 1 ] || exit 2
  [ $rc -eq 0 ] || { echo "check $name: an impossible row (see check-$name.json)"; status=1; }
}
check uncalibrated
check transfer --calibration "$out/small.yaml"
check own --calibration "$out/eight.yaml"
check holdout --holdout every-other
"$bin" verify "$eight" --expect h200-sxm --gpus 8 >"$out/verify.txt"
verify_rc=$?
[ $verify_rc -le 1 ] || { echo "verify failed to run ($verify_rc)"; exit 2; }
[ $verify_rc -eq 0 ] || { echo "verify: FAIL (see verify.txt)"; status=1; }

python3 - "$out" <<'PY' >"$out/summary.txt" || status=1
import json, sys
out = sys.argv[1]
runs = [("uncalibrated", "uncalibrated model"), ("transfer", "small-machine calibration"),
        ("own", "8-GPU calibration"), ("holdout", "8-GPU, held-out sizes")]
table = {}
for name, _ in runs:
    d = json.load(open(f"{out}/check-{name}.json"))
    for s in d["stats"]:
        if " x" not in s["group"] or (name == "holdout" and s["set"] != "held_out"):
            continue
        table.setdefault(s["group"], {})[name] = s
print("8-GPU collectives, 64 KiB - 8 GiB: median / max |predicted / measured - 1| (basis)")
print(f"{'group':18}" + "".join(f"{label:>32}" for _, label in runs))
gate_missed = False
for group, row in table.items():
    cells = []
    for name, _ in runs:
        s = row.get(name)
        cells.append("-" if s is None else "%.1f%% / %.1f%% (%s)" % (
            100 * s["median_abs_error"], 100 * s["max_abs_error"], s.get("basis") or "model"))
    print(f"{group:18}" + "".join(f"{c:>32}" for c in cells))
    own = row.get("own")
    if own is None or own["median_abs_error"] > 0.05:
        gate_missed = True
print("gate (median <= 5% after the 8-GPU calibration):", "missed" if gate_missed else "met")
sys.exit(1 if gate_missed else 0)
PY
cat "$out/summary.txt"
grep "^Verdict" "$out/verify.txt"
exit $status
