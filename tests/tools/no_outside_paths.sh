#!/usr/bin/env bash
# A user has this repository and nothing else: no file of it, and nothing the commands print, may
# send a reader to the project's private working notes outside it. Checked: every file git tracks,
# and every untracked one it does not ignore (without git: every file under the source folder but
# build folders), and the output of --help, every command's --help, catalog, plan, plan --json,
# verify --claims (text and JSON), verify on a measurement file with its three report formats, and
# accuracy on the published corpus (analytic engine). The names are assembled from pieces below, so
# that this script does not name them itself.
# Usage: no_outside_paths.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"
cd "$src" || exit 1
md=".md"
{
  printf '%s\n' "REFER""ENCE$md" "SCEN""ARIO$md" "DES""IGN$md" "STY""LE$md" "SIM""GRID$md"
  printf '%s\n' "../sha""red" "/work/sha""red" "field-gui""de.txt"
} >"$tmp/names"

# Files owned by work in progress elsewhere that still cite the notes; each entry is to go when
# its file is fixed (an entry whose file no longer mentions them fails the test). None now.
pending=()

# mentions FILE...: prints "file:line: text" for every mention in the given files.
mentions() { grep -n -I -H -F -f "$tmp/names" -- "$@" 2>/dev/null; }

# The check itself must see a mention: one planted in a scratch file.
printf 'see %s for the thresholds\n' "$(sed -n 1p "$tmp/names")" >"$tmp/planted.txt"
mentions "$tmp/planted.txt" >/dev/null || fail "the check does not see a planted mention"

# 1. The files.
if command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard >"$tmp/files"
else
  find . \( -name .git -o -name 'build*' \) -prune -o -type f -print0 >"$tmp/files"
fi
[ "$(tr -cd '\0' <"$tmp/files" | wc -c)" -ge 100 ] || fail "fewer than 100 files listed"
: >"$tmp/found"
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  mentions "$f" >>"$tmp/found"
done <"$tmp/files"
for p in "${pending[@]}"; do
  if ! grep -q "^$p:" "$tmp/found"; then
    fail "$p no longer mentions the notes: remove it from 'pending' in $(basename "$0")"
  fi
  grep -v "^$p:" "$tmp/found" >"$tmp/found.rest"
  mv "$tmp/found.rest" "$tmp/found"
done
if [ -s "$tmp/found" ]; then
  cat "$tmp/found" >&2
  fail "$(wc -l <"$tmp/found") mention(s) in the repository's files (above)"
fi

# 2. What the commands print. Each runs from the repository's root; its exit status is other
# tests' business (verify exits 1 on a failed check), its output this one's.
run() {
  local name="$1"
  shift
  "$bin" "$@" >"$tmp/out.$name" 2>&1
  echo "$name" >>"$tmp/ran"
}
run help --help
for c in $(awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}' \
  "$tmp/out.help"); do
  run "help-$c" "$c" --help
done
run catalog catalog
run plan plan
run plan-json plan --json
run claims verify --claims scenarios/seed/claims.yaml
run claims-json verify --claims scenarios/seed/claims.yaml --json
run verify verify tests/data/synthetic-h200-2gpu.json --report "$tmp/report.md" \
  --report "$tmp/report.html" --report "$tmp/report.json"
# The analytic engine prints every run, source and note the simulator's would (the simulator adds
# columns of numbers) in 0.1 s instead of a minute (ten under CI's sanitizer build).
run accuracy accuracy scenarios/published --engine analytic
[ "$(wc -l <"$tmp/ran")" -ge 20 ] || fail "only $(wc -l <"$tmp/ran") commands ran"
for r in md html json; do
  [ -s "$tmp/report.$r" ] || fail "verify wrote no $r report"
done
mentions "$tmp"/out.* "$tmp"/report.* >"$tmp/printed"
if [ -s "$tmp/printed" ]; then
  sed "s|^$tmp/||" "$tmp/printed" >&2
  fail "$(wc -l <"$tmp/printed") mention(s) in command output (above; out.NAME is the command)"
fi
finish no_outside_paths
