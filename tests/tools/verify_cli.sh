#!/usr/bin/env bash
# `clustersim verify`: acceptance verdicts (exit 0 / 1), each doctored copy failing on its check,
# signed reports that detect edits, and the seed's claims.
# Usage: verify_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"
data="$src/tests/data"

# Clean files pass (exit 0); each doctored copy exits 1 with its check FAILing, and only it.
pairs=("$data/synthetic-h200-2gpu.json:$data/doctored-synthetic")
[ -f "$src/scenarios/measurements/h200-2gpu.json" ] &&
  pairs+=("$src/scenarios/measurements/h200-2gpu.json:$data/doctored-h200-2gpu")
for pair in "${pairs[@]}"; do
  clean="${pair%%:*}"
  dir="${pair#*:}"
  "$bin" verify "$clean" >"$tmp/clean.txt" || fail "$clean: verify exited $?"
  grep -qE "^Verdict: (PASS|WARN)" "$tmp/clean.txt" || fail "$clean: verdict"
  # An H200 file relabelled as an H100 fails identity, and its HBM copies (4.2-4.3 TB/s) are
  # beyond an H100's 3.35 TB/s: physically impossible, so the HBM check fails too.
  for c in fewer-sms:identity wrong-pci-id:identity,physically_possible,hbm \
           slow-busbw:all_reduce_one_node socket-transport:nccl_transport; do
    file="$dir/${c%%:*}.json"
    check="${c#*:}"
    "$bin" verify "$file" --json >"$tmp/d.json"
    [ $? -eq 1 ] || fail "$file: should exit 1"
    python3 - "$tmp/d.json" "$check" <<'PY' || fail "$file: should FAIL on $check only"
import json, sys
d = json.load(open(sys.argv[1]))
failed = [c["id"] for c in d["checks"] if c["status"] == "FAIL"]
assert failed == sys.argv[2].split(","), failed
assert d["verdict"] == "FAIL"
PY
  done
done

# Absurd figures (a GEMM above the datasheet peak, copies above HBM, PCIe and NVLink rates, an
# all_reduce faster than its links allow) are a wrong or edited file: each check they feed fails.
python3 - "$data/synthetic-h200-2gpu.json" "$tmp/absurd.json" <<'PY' || fail "could not write the absurd file"
import json, sys
d = json.load(open(sys.argv[1]))
for g in d["gemm"]: g["tflops"] *= 8; g["tflops_min"] *= 8
for b in d["bandwidth"]: b["GBps"] *= 10
for c in d["collectives"]:
    for k in ("out_of_place", "in_place"): c[k]["time_us"] /= 20
json.dump(d, open(sys.argv[2], "w"))
PY
"$bin" verify "$tmp/absurd.json" --json >"$tmp/d.json"
[ $? -eq 1 ] || fail "absurd figures: should exit 1"
python3 - "$tmp/d.json" <<'PY' || fail "absurd figures: the checks they feed should FAIL"
import json, sys
d = json.load(open(sys.argv[1]))
failed = [c["id"] for c in d["checks"] if c["status"] == "FAIL"]
assert failed == ["physically_possible", "gemm", "hbm", "host_link", "p2p",
                  "all_reduce_one_node"], failed
assert "physically impossible" in [c for c in d["checks"] if c["id"] == "gemm"][0]["why"]
PY

# Reports: Markdown, HTML with the SVG plot, JSON; signed; edits and other keys detected.
m="$data/synthetic-h200-2gpu.json"
printf 'a-secret-key\n' >"$tmp/key"
"$bin" verify "$m" --report "$tmp/r.md" --report "$tmp/r.html" --report "$tmp/r.json" \
  --sign-key "$tmp/key" >/dev/null || fail "verify with reports"
grep -q "<svg" "$tmp/r.html" || fail "the HTML report has the plot"
# A measurement file's strings are data: a hostname and a GPU name carrying markup show as text.
python3 - "$m" "$tmp/hostile.json" <<'PY' || fail "could not write the hostile file"
import json, sys
d = json.load(open(sys.argv[1]))
for h in d.get("hosts", []):
    h["hostname"] = "<script>alert('h')</script>"
for g in d.get("gpus", []):
    g["host"] = "<script>alert('h')</script>"
    g["name"] = "NVIDIA H200 <img src=x onerror=alert(1)>"
json.dump(d, open(sys.argv[2], "w"))
PY
"$bin" verify "$tmp/hostile.json" --report "$tmp/hostile.html" >/dev/null 2>&1
[ -s "$tmp/hostile.html" ] || fail "no HTML report for the file with markup in its strings"
if grep -q "<script>\|<img" "$tmp/hostile.html"; then fail "markup from the file reached the HTML report"; fi
grep -q "&lt;script&gt;" "$tmp/hostile.html" || fail "the hostname should show, escaped, in the HTML report"
grep -q "SHA-256 of the measurement file" "$tmp/r.md" || fail "the report cites the digest"
sha="$(sha256sum "$m" | cut -d' ' -f1)"
grep -q "$sha" "$tmp/r.md" || fail "the digest is the file's SHA-256 ($sha)"
for r in r.md r.html r.json; do
  "$bin" verify --check-report "$tmp/$r" --sign-key "$tmp/key" "$m" >/dev/null \
    || fail "$r: a real report should check out"
done
sed 's/FAIL/PASS/; s/WARN/PASS/; s/slowest/fastest/' "$tmp/r.md" >"$tmp/edited.md"
"$bin" verify --check-report "$tmp/edited.md" --sign-key "$tmp/key" >/dev/null
[ $? -eq 1 ] || fail "an edited report should exit 1"
printf 'other' >"$tmp/key2"
"$bin" verify --check-report "$tmp/r.html" --sign-key "$tmp/key2" >/dev/null
[ $? -eq 1 ] || fail "another key should exit 1"
"$bin" verify --check-report "$tmp/r.json" --sign-key "$tmp/key" "$data/doctored-synthetic/fewer-sms.json" >/dev/null
[ $? -eq 1 ] || fail "a report of other measurement bytes should exit 1"

# Claims: the seed's file has an IMPOSSIBLE one (exit 1); a one-line claim on a scenario.
"$bin" verify --claims "$src/scenarios/seed/claims.yaml" --json >"$tmp/claims.json"
[ $? -eq 1 ] || fail "the seed's claims include impossible ones: exit 1"
python3 - "$tmp/claims.json" "$src/tests/golden/claims-seed.json" <<'PY' || fail "claims JSON vs golden"
import json, sys
got = json.load(open(sys.argv[1]))["claims"]
want = json.load(open(sys.argv[2]))["claims"]
assert [c["id"] for c in got] == [c["id"] for c in want]
for g, w in zip(got, want):
    assert g["verdict"] == w["verdict"], (g["id"], g["verdict"])
    assert abs(g["floor"]["value"] / w["floor"]["value"] - 1) < 1e-6, g["id"]
    assert g["floor"]["why"], g["id"]
PY
"$bin" verify --claim "all_reduce 2GB 18ms" --scenario "$src/scenarios/seed/interconnect-400g-ib.yaml" >"$tmp/c.txt" \
  || fail "a possible-only-if claim exits 0"
grep -q "POSSIBLE_ONLY_IF" "$tmp/c.txt" && grep -q "only if:  >= 3 x ib-ndr" "$tmp/c.txt" \
  || fail "the claim names what it would take"
# A scenario's own claims: list, judged on its hardware by --scenario alone.
rail="$src/scenarios/llama3-70b-64xh100-ndr-rail.yaml"
"$bin" verify --scenario "$rail" --json >"$tmp/sc.json" || fail "the rail scenario's claims exit 0"
python3 - "$tmp/sc.json" <<'PY' || fail "the rail scenario's claims"
import json, sys
got = {c["id"]: c for c in json.load(open(sys.argv[1]))["claims"]}
assert {k: c["verdict"] for k, c in got.items()} == {
    "allreduce-8gib-busbw-760": "BEYOND_PROTOCOL_RATE",      # 787.5 raw, 740 at IB's 0.94
    "allreduce-2gb-8ms-without-sharp": "POSSIBLE_ONLY_IF",  # 8.75 ms floor without SHARP
    "training-1100-tokens-per-gpu": "POSSIBLE"}, got
assert all("llama3-70b-64xh100-ndr-rail.yaml" in c["hardware"] for c in got.values())
assert "SHARP off" in got["allreduce-2gb-8ms-without-sharp"]["hardware"]
assert got["allreduce-2gb-8ms-without-sharp"]["conditions"] == [
    "in-network reduction (SHARP) runs the all_reduce"]
b = got["allreduce-8gib-busbw-760"]
assert b["floor"]["value"] > 760e9 > b["achievable_floor"]["value"], b
PY
# One that beats the floor exits 1; a bad claim cites file:line:col and exits 2; none exits 2.
sed '/^claims:/,$d' "$rail" >"$tmp/s.yaml"
cp "$tmp/s.yaml" "$tmp/bad.yaml"
printf 'claims:\n  - id: fast\n    says: x\n    kind: collective_time\n    op: all_reduce\n    size: 2GB\n    time: 1ms\n' >>"$tmp/s.yaml"
"$bin" verify --scenario "$tmp/s.yaml" >"$tmp/s.txt"
[ $? -eq 1 ] || fail "an impossible scenario claim should exit 1"
grep -q "^IMPOSSIBLE  *fast" "$tmp/s.txt" || fail "the impossible claim is named: $(cat "$tmp/s.txt")"
lines=$(wc -l <"$tmp/bad.yaml")
printf 'claims:\n  - id: slow\n    says: x\n    kind: collective_time\n    op: all_reduce\n    size: 2GB\n' >>"$tmp/bad.yaml"
"$bin" verify --scenario "$tmp/bad.yaml" >/dev/null 2>"$tmp/bad.err"
[ $? -eq 2 ] || fail "a claim without its time should exit 2"
grep -q "bad.yaml:$((lines + 2)):5: claims\[0\].time: missing" "$tmp/bad.err" \
  || fail "the bad claim's file:line:col: $(cat "$tmp/bad.err")"
"$bin" plan "$tmp/bad.yaml" >/dev/null 2>&1
[ $? -eq 2 ] || fail "plan rejects the scenario with a bad claim too"
"$bin" verify --scenario "$src/scenarios/h200-8gpu.yaml" >/dev/null 2>"$tmp/none.err"
[ $? -eq 2 ] && grep -q "has no claims" "$tmp/none.err" || fail "a scenario without claims: exit 2"
"$bin" verify --claim "all_reduce 2GB fast" >/dev/null 2>&1
[ $? -eq 2 ] || fail "an unreadable claim should exit 2"
"$bin" verify >/dev/null 2>&1
[ $? -eq 2 ] || fail "verify with nothing to judge should exit 2"

finish verify_cli
