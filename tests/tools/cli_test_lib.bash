# Sourced by every CLI test (tests/tools/*.sh, run as `bash test.sh <clustersim binary> <source
# dir>`): sets bin, src and a scratch folder tmp (removed at exit), counts failures with
# `fail "why"`, checks bad input with `expect_bad`, and `finish NAME` ends the test: exit 1 with
# the count if any check failed.
set -u
bin="$1"
src="${2:-}"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# expect_bad COMMAND TEXT ARGS...: `clustersim COMMAND ARGS...` exits 2 (bad input) with TEXT (a
# fixed string) on stderr. expect_bad_match is the same with an extended regular expression.
expect_bad() { _expect_bad -F "$@"; }
expect_bad_match() { _expect_bad -E "$@"; }
_expect_bad() {
  local how="$1" command="$2" want="$3"
  shift 3
  "$bin" "$command" "$@" >/dev/null 2>"$tmp/bad.err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "$command $* exited $rc, want 2"
  grep -q "$how" -- "$want" "$tmp/bad.err" || fail "$command $*: '$want' not in: $(cat "$tmp/bad.err")"
}
# The --set key errors every command that takes --set reports alike and exits 2 on (sweep,
# plan, compare, search, topo): COMMAND SCENARIO [more arguments the command needs].
expect_bad_set_keys() {
  local command="$1" scenario="$2"
  shift 2
  expect_bad "$command" "cluster.nodez: unknown key 'nodez' in cluster (did you mean 'nodes'?" \
    "$@" "$scenario" --set cluster.nodez=4
  expect_bad "$command" "workload.parallelism.tpp" "$@" "$scenario" --set workload.parallelism.tpp=2
  expect_bad "$command" "workload.seq_len takes a value" "$@" "$scenario" --set workload.seq_len.x=1
  expect_bad "$command" "--set cluster.nodes: expected key=" "$@" "$scenario" --set cluster.nodes
  expect_bad "$command" "cluster.node.nic overlaps cluster.node" "$@" "$scenario" \
    --set "cluster.node={gpu: h100-sxm}" --set cluster.node.nic=ib-ndr
}
finish() {
  if [ "$fails" -ne 0 ]; then
    echo "$1: $fails failure(s)" >&2
    exit 1
  fi
  echo "$1: ok"
  exit 0
}
