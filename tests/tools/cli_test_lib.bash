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
# The sanitizer build (CLUSTERSIM_TIME_SCALE above 1) runs each command 4-10x slower; loops over
# every scenario file skip there the clusters of more than 2,048 nodes (topo_cli), or plan them
# with the formulas (plan_cli): 8,192 and 16,384 nodes in the shipped files, the same code as
# the 2,048-node ones at 3-22 s a command there, which the optimised build's run still covers.
too_big_for_sanitizers() {
  [ "${CLUSTERSIM_TIME_SCALE:-1}" -gt 1 ] || return 1
  local nodes
  nodes=$(awk '/^cluster:/{c=1; next} c && /^[^ #]/{c=0} c && $1=="nodes:"{print $2; exit}' "$1")
  [ -n "$nodes" ] && [ "$nodes" -gt 2048 ]
}
# The study of the journal tests (study_journal_cli, distributed_cli): a grid of study_rows
# simulated rows of 16K GPUs (0.2-0.8 s each), long enough to be killed half-way. The sanitizer
# build (CLUSTERSIM_TIME_SCALE above 1) takes about 1.5 s a row, so there the grid has two
# sequence lengths instead of four: 8 rows, still several per rank of three and several left when
# a run is killed, so that the same splitting, killing, timeout and resume paths run.
if [ "${CLUSTERSIM_TIME_SCALE:-1}" -gt 1 ]; then
  study_rows=8
  study_seq_lens=4096,32768
else
  study_rows=16
  study_seq_lens=4096,8192,16384,32768
fi
study_grid=(--set cluster.fabric.oversubscription=1,2,4,8 --set "workload.seq_len=$study_seq_lens"
  --engine des --threads 1)
finish() {
  if [ "$fails" -ne 0 ]; then
    echo "$1: $fails failure(s)" >&2
    exit 1
  fi
  echo "$1: ok"
  exit 0
}
