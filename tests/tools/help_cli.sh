#!/usr/bin/env bash
# Every command's --help ends with two or three real examples, and the top level's with three;
# each example that writes no file and needs no GPU runs from the repository's root and exits 0.
# Usage: help_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"
"$bin" --help >"$tmp/top.txt" || fail "clustersim --help exited $?"
[ "$(grep -c '^  clustersim ' "$tmp/top.txt")" -eq 3 ] || fail "clustersim --help: not three examples"
commands=$(awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}' "$tmp/top.txt")
[ "$(echo "$commands" | wc -w)" -ge 13 ] || fail "--help lists too few commands: $commands"
for c in $commands; do
  "$bin" "$c" --help >"$tmp/$c.txt" || fail "clustersim $c --help exited $?"
  grep -qF "Examples (from the repository's root):" "$tmp/$c.txt" || fail "$c --help has no examples"
  n=$(sed -n "/^Examples/,\$p" "$tmp/$c.txt" | grep -cE '^  (clustersim|mpirun) ')
  [ "$n" -ge 1 ] && [ "$n" -le 3 ] || fail "$c --help: $n examples (want 1-3)"
  sed -n "/^Examples/,\$p" "$tmp/$c.txt" | grep -E '^  clustersim ' | sed 's/^  clustersim //' |
    while IFS= read -r args; do
      # Those that write a file (-o) or drive GPUs (validate) are shown, not run here.
      case " $args " in *" -o "*|"validate "*|*" --calibration overlay.yaml "*) continue ;; esac
      echo "ran: $args" >>"$tmp/ran.txt"
      (cd "$src" && eval "\"\$bin\" $args") >/dev/null 2>"$tmp/err.txt" ||
        echo "FAIL: example 'clustersim $args' exited $? ($(head -c 300 "$tmp/err.txt"))"
    done >>"$tmp/example-failures.txt"
done
ran=$(wc -l <"$tmp/ran.txt")
[ "$ran" -ge 20 ] || fail "only $ran examples ran: $(cat "$tmp/ran.txt")"
if [ -s "$tmp/example-failures.txt" ]; then
  cat "$tmp/example-failures.txt" >&2
  fail "an example does not run"
fi
finish help_cli
