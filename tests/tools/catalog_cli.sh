#!/usr/bin/env bash
# `clustersim catalog`: tables and JSON for every kind, sources present, bad flags exit 2.
# Usage: catalog_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"

# Human tables: exit 0, every section, units and sources.
if "$bin" catalog >"$tmp/all.txt" 2>"$tmp/err.txt"; then
  for want in "GPUs" "Scale-up links" "NICs" "Switches" "Models" "sources:" \
              "h100-sxm" "989 TFLOP/s" "450 GB/s" "ib-ndr" "400 Gb/s" "quantum-2-qm9700" \
              "llama3-405b" "NVIDIA H100 Tensor Core GPU datasheet"; do
    grep -qF -- "$want" "$tmp/all.txt" || fail "catalog output lacks '$want'"
  done
else
  fail "catalog exited $? ($(cat "$tmp/err.txt"))"
fi

# JSON: valid, one array per kind, SI numbers, a source on every entry.
if "$bin" catalog --json >"$tmp/all.json"; then
  python3 -m json.tool "$tmp/all.json" >/dev/null || fail "catalog --json is not valid JSON"
  python3 - "$tmp/all.json" <<'PY' || fail "catalog --json content"
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) == {"gpus", "scale_up", "nics", "switches", "models"}, d.keys()
for kind, rows in d.items():
    assert isinstance(rows, list) and rows, kind
    for r in rows:
        assert r["id"] and len(r["source"]) > 20, (kind, r["id"])
h100 = next(g for g in d["gpus"] if g["id"] == "h100-sxm")
assert abs(h100["bf16_flops"] - 989e12) < 1e12, h100["bf16_flops"]
assert abs(h100["nvlink_Bps"] - 450e9) < 1e6, h100["nvlink_Bps"]
assert h100["pci_device_ids"] == ["0x2330"], h100["pci_device_ids"]
ndr = next(n for n in d["nics"] if n["id"] == "ib-ndr")
assert ndr["line_rate_Bps"] == 50e9 and ndr["default_switch"] == "quantum-2-qm9700", ndr
PY
else
  fail "catalog --json exited $?"
fi

# One kind only.
"$bin" catalog --json --kind nics >"$tmp/nics.json" || fail "catalog --json --kind nics exited $?"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert list(d)==["nics"], d.keys()' \
  "$tmp/nics.json" || fail "--kind nics printed other kinds"
"$bin" catalog --kind models >"$tmp/models.txt" || fail "catalog --kind models exited $?"
grep -q "GPUs" "$tmp/models.txt" && fail "--kind models printed the GPU table"
grep -q "llama2-70b" "$tmp/models.txt" || fail "--kind models lacks llama2-70b"

# Bad input exits 2.
"$bin" catalog --kind bogus >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "--kind bogus exited $rc, expected 2"
"$bin" catalog --bogus >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "--bogus exited $rc, expected 2"

finish catalog_cli
