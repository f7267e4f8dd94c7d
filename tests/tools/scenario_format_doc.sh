#!/usr/bin/env bash
# docs/scenario-format.md cannot drift from the loader: every ```yaml block in it is a complete
# scenario that `clustersim plan` plans (exit 0); a block whose first line names a file under
# scenarios/examples/ is that file, byte for byte; every `clustersim` line of its ```sh blocks
# runs from the repository's root and exits 0; and its ```json block has exactly the keys of
# `clustersim plan --json` on the built-in default (lists: their first entry's keys).
# Usage: scenario_format_doc.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"
doc="$src/docs/scenario-format.md"
[ -f "$doc" ] || { fail "no $doc"; finish scenario_format_doc; }

# The blocks, each to its own file. The YAML ones go into a copy of scenarios/examples/, so that
# a relative path in an example (calibration:) resolves as it does beside the committed ones.
mkdir -p "$tmp/examples"
cp -R "$src/scenarios/examples/." "$tmp/examples/"
python3 - "$doc" "$tmp" <<'PY' || fail "cannot split $doc into its blocks"
import re, sys
doc, tmp = sys.argv[1:]
count, lang, body = {}, None, []
for line in open(doc, encoding="utf-8"):
    if lang is None:
        m = re.match(r"^```(\w+)\s*$", line)
        if m:
            lang, body = m.group(1), []
    elif line.rstrip() == "```":
        n = count[lang] = count.get(lang, 0) + 1
        where = {"yaml": f"{tmp}/examples/doc-{n}.yaml"}.get(lang, f"{tmp}/doc-{lang}-{n}")
        open(where, "w", encoding="utf-8").write("".join(body))
        lang = None
    else:
        body.append(line)
if lang is not None:
    sys.exit(f"a ```{lang} block is not closed")
PY

# 1. Every YAML block plans.
n=0
for f in "$tmp"/examples/doc-*.yaml; do
  [ -f "$f" ] || continue
  n=$((n + 1))
  "$bin" plan "$f" >"$tmp/plan.out" 2>&1 ||
    fail "docs/scenario-format.md, YAML block $(basename "$f" .yaml | sed 's/doc-//'): plan exited $?: $(head -c 400 "$tmp/plan.out")"
  # 2. A block that names a committed example is that file.
  named=$(sed -n '1s|^# \(scenarios/examples/[A-Za-z0-9._-]*\.yaml\).*|\1|p' "$f")
  if [ -n "$named" ]; then
    cmp -s "$f" "$src/$named" || fail "the block that names $named differs from the file"
    echo "$named" >>"$tmp/named"
  fi
done
[ "$n" -ge 8 ] || fail "only $n YAML blocks in docs/scenario-format.md"
[ -s "$tmp/named" ] || fail "no YAML block names a file under scenarios/examples/"

# 3. The command lines.
ran=0
for f in "$tmp"/doc-sh-*; do
  [ -f "$f" ] || continue
  while IFS= read -r line; do
    case "$line" in clustersim\ *) ;; *) continue ;; esac
    ran=$((ran + 1))
    (cd "$src" && eval "\"\$bin\" ${line#clustersim }") >/dev/null 2>"$tmp/sh.err" ||
      fail "docs/scenario-format.md: '$line' exited $?: $(head -c 300 "$tmp/sh.err")"
  done <"$f"
done
[ "$ran" -ge 3 ] || fail "only $ran command lines ran"

# 4. The JSON block's keys against the real output.
(cd "$src" && "$bin" plan --json) >"$tmp/plan.json" || fail "plan --json exited $?"
python3 - "$tmp/doc-json-1" "$tmp/plan.json" <<'PY' || fail "plan --json keys differ from the doc's"
import json, sys
def paths(v, at=""):
    out = set()
    if isinstance(v, dict):
        for k, x in v.items():
            out.add(at + k)
            out |= paths(x, at + k + ".")
    elif isinstance(v, list) and v and isinstance(v[0], dict):
        out |= paths(v[0], at + "[].")
    return out
doc, real = (paths(json.load(open(p))) for p in sys.argv[1:])
for what, keys in (("in the doc, not in plan --json", doc - real),
                   ("in plan --json, not in the doc", real - doc)):
    if keys:
        print(what + ": " + ", ".join(sorted(keys)), file=sys.stderr)
sys.exit(1 if doc != real else 0)
PY
finish scenario_format_doc
