#!/usr/bin/env bash
# sweep and search under `mpirun -np 3`: the sweep's CSV and JSON byte for byte those of one
# process, search --refine-des's JSON and table too (but for the wall time); a rank
# killed half-way named and the run ended (no hang) with the journal kept, then --resume giving
# the same file; a damaged journal line found, reported and rerun; a SIGKILL of the whole run
# followed by --resume giving the file of an uninterrupted run. Exits 77 (CTest: skipped) without
# mpirun or in a build without MPI.
# Usage: distributed_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"
command -v mpirun >/dev/null || { echo "skip: no mpirun"; exit 77; }
s70b="$src/scenarios/llama3-70b-64xh100-ndr-rail.yaml"
s16k="$src/scenarios/llama3-405b-16k-h100.yaml"
# (Under AddressSanitizer, LeakSanitizer would fail the ranks' exit on Open MPI's own allocations:
# leak checking off for the ranks.)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpi=(mpirun --allow-run-as-root --oversubscribe -np 3)
# Every run is bounded, the launcher killed outright if it ignores the timeout's SIGTERM: a hang
# fails this test in minutes, naming the step, instead of using up CTest's limit.
limit=(timeout -k 10)
# The study grid (cli_test_lib.bash): $study_rows simulated rows, long enough to be killed half-way.
grid=("${study_grid[@]}")

# A build without MPI says so when started as one of several ranks.
"${limit[@]}" 120 "${mpi[@]}" "$bin" sweep "$s70b" --set cluster.nodes=4,8 --json >"$tmp/probe.json" 2>"$tmp/probe.err"
if grep -q "built without MPI" "$tmp/probe.err"; then
  echo "skip: this clustersim has no MPI"
  exit 77
fi

# The same bytes as one process: the CSV of simulated rows, and the JSON of analytic ones.
"${limit[@]}" 300 "$bin" sweep "$s16k" "${grid[@]}" --csv "$tmp/one.csv" >/dev/null 2>"$tmp/err.txt" ||
  fail "one process exited $? ($(cat "$tmp/err.txt"))"
"${limit[@]}" 300 "${mpi[@]}" "$bin" sweep "$s16k" "${grid[@]}" --csv "$tmp/three.csv" >"$tmp/three.txt" 2>"$tmp/err.txt" ||
  fail "mpirun -np 3 exited $? ($(cat "$tmp/err.txt"))"
cmp -s "$tmp/one.csv" "$tmp/three.csv" || fail "the CSV of 3 ranks differs from one process's"
[ "$(grep -c "^Sweep of" "$tmp/three.txt")" -eq 1 ] || fail "not exactly one rank printed the table"
wide=(--set cluster.nodes=4,8,16,32 --set workload.seq_len=4096,8192 --set workload.parallelism.zero=1,2,3)
"${limit[@]}" 300 "$bin" sweep "$s70b" "${wide[@]}" --json >"$tmp/one.json" || fail "one process --json exited $?"
"${limit[@]}" 300 "${mpi[@]}" "$bin" sweep "$s70b" "${wide[@]}" --json --threads 1 >"$tmp/three.json" 2>"$tmp/err.txt" ||
  fail "mpirun --json exited $? ($(cat "$tmp/err.txt"))"
cmp -s "$tmp/one.json" "$tmp/three.json" || fail "the JSON of 3 ranks differs from one process's"

# search --refine-des: the simulations spread over the ranks, the output as one process prints it
# (less the wall time and the rate it gives).
strip_wall() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [d.pop(k) for k in ("wall_s","layouts_per_minute")]; print(json.dumps(d, indent=1, sort_keys=True))' "$1"; }
refine=(search "$s70b" --refine-des 4 --top 6 --threads 1)
"${limit[@]}" 300 "$bin" "${refine[@]}" --json >"$tmp/s1.json" 2>/dev/null || fail "search --refine-des exited $?"
"${limit[@]}" 300 "${mpi[@]}" "$bin" "${refine[@]}" --json >"$tmp/s3.json" 2>"$tmp/err.txt" ||
  fail "mpirun search --refine-des exited $? ($(cat "$tmp/err.txt"))"
[ "$(strip_wall "$tmp/s1.json")" = "$(strip_wall "$tmp/s3.json")" ] || fail "search --json of 3 ranks differs"
"${limit[@]}" 300 "$bin" "${refine[@]}" 2>/dev/null | grep -v "^  searched" >"$tmp/s1.txt"
"${limit[@]}" 300 "${mpi[@]}" "$bin" "${refine[@]}" 2>/dev/null | grep -v "^  searched" >"$tmp/s3.txt"
cmp -s "$tmp/s1.txt" "$tmp/s3.txt" || fail "search's table of 3 ranks differs: $(diff "$tmp/s1.txt" "$tmp/s3.txt" | head -5)"
grep -qF "Why #1 wins: where each step goes (simulated)" "$tmp/s3.txt" || fail "no simulated why-table"

# The pid of rank $2 of the run whose command line holds $1 (not its children: each simulated row
# runs in a child of its own, which inherits the rank's environment). A child that exits between
# pgrep and ps has no parent left to check: skipped, or it would be taken for the rank.
rank_pid() {
  for p in $(pgrep -f -- "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" || continue
    parent=$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')
    [ -n "$parent" ] && [ -r "/proc/$parent/environ" ] || continue
    tr '\0' '\n' <"/proc/$parent/environ" 2>/dev/null | grep -q "^OMPI_COMM_WORLD_RANK=" || echo "$p"
  done | head -1
}
# Waits until journal $1 holds $2 records (at most 60 s).
await_records() {
  for _ in $(seq 1200); do
    [ "$(($({ wc -l <"$1"; } 2>/dev/null || echo 1) - 1))" -ge "$2" ] && return 0
    sleep 0.05
  done
  return 1
}

# Every process of the run whose command line holds $1 that an MPI launcher started (ranks and
# the rows' children), one pid a line.
rank_pids() {
  for p in $(pgrep -f -- "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^OMPI_COMM_WORLD_RANK=" && echo "$p"
  done
}
# Waits until process $1 has ended (at most $2 s).
await_exit() {
  for _ in $(seq $(($2 * 20))); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.05
  done
  return 1
}

# A rank killed half-way with the launcher told to keep the others running (--enable-recovery):
# rank 0 names the dead rank and its row and ends the run, no hang, no CSV; the journal keeps what
# was done and --resume finishes. (Open MPI 4's mpirun exits 0 under --enable-recovery whatever
# the ranks return, so the exit code is not checked here.)
"${limit[@]}" 300 "${mpi[@]}" --enable-recovery "$bin" sweep "$s16k" "${grid[@]}" --csv "$tmp/kr.csv" \
  >/dev/null 2>"$tmp/kr.err" &
run=$!
await_records "$tmp/kr.csv.journal" 2 || fail "no rows journaled within 60 s"
victim=$(rank_pid "$tmp/kr.csv" 2)
[ -n "$victim" ] && kill -9 "$victim"
# Ours to end: every rank within 120 s of the kill (rank 0 on finding the death, the others on its
# quit message or, failing that, on its silence: kRankSilenceLimit_s, 30 s).
ended=0
for _ in $(seq 2400); do
  [ -z "$(rank_pids "$tmp/kr.csv")" ] && { ended=1; break; }
  sleep 0.05
done
[ "$ended" -eq 1 ] || fail "a killed rank: ranks still running 120 s after the kill ($(cat "$tmp/kr.err"))"
# The launcher's: Open MPI 4's mpirun under --enable-recovery has stayed, now and then, after all
# its ranks had ended (twice in CI's AddressSanitizer stage, after PMIx "BAD-PARAM" errors of its
# own). Not this program's hang: reported, given 30 s, then ended.
if ! await_exit "$run" 30; then
  echo "note: mpirun --enable-recovery stayed 30 s after its ranks had ended; killed"
  pkill -9 -f -- "$tmp/kr.csv"
fi
wait "$run"
grep -qE "clustersim sweep: rank 2 \(pid $victim on [^)]+\) died \((no row in flight|in flight there: row [0-9]+ \(cluster)" "$tmp/kr.err" ||
  fail "the dead rank is not named: $(cat "$tmp/kr.err")"
grep -qF "rows are in $tmp/kr.csv.journal: rerun with --resume" "$tmp/kr.err" || fail "no --resume hint"
[ -e "$tmp/kr.csv" ] && fail "a run with a dead rank wrote its CSV"
"${limit[@]}" 300 "${mpi[@]}" "$bin" sweep "$s16k" "${grid[@]}" --csv "$tmp/kr.csv" --resume >/dev/null 2>"$tmp/err.txt" ||
  fail "--resume after a dead rank exited $? ($(cat "$tmp/err.txt"))"
cmp -s "$tmp/one.csv" "$tmp/kr.csv" || fail "dead rank + resume: the CSV differs"

# Under mpirun's default the launcher ends every rank when one dies (exit 137) and names it.
"${limit[@]}" 300 "${mpi[@]}" "$bin" sweep "$s16k" "${grid[@]}" --csv "$tmp/kd.csv" >/dev/null 2>"$tmp/kd.err" &
run=$!
await_records "$tmp/kd.csv.journal" 2 || fail "no rows journaled within 60 s"
victim=$(rank_pid "$tmp/kd.csv" 1)
[ -n "$victim" ] && kill -9 "$victim"
wait "$run"
rc=$?
{ [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; } || fail "a killed rank under the default launcher: exit $rc"
grep -qE "rank 1 .*(died|exited on signal 9)" "$tmp/kd.err" || fail "rank 1 not named: $(cat "$tmp/kd.err")"

# The whole run killed (launcher and ranks), a journal line damaged, then --resume: the same file.
"${limit[@]}" 300 "${mpi[@]}" "$bin" sweep "$s16k" "${grid[@]}" --csv "$tmp/w.csv" >/dev/null 2>&1 &
run=$!
await_records "$tmp/w.csv.journal" 3 || fail "no rows journaled within 60 s"
kill -9 $(pgrep -f -- "$tmp/w.csv") 2>/dev/null
wait "$run" 2>/dev/null
[ -e "$tmp/w.csv" ] && fail "a killed run wrote its CSV"
row=$(sed -n 3p "$tmp/w.csv.journal" | cut -d' ' -f2)
sed -i '3s/"ok":/"oK":/' "$tmp/w.csv.journal"
"${limit[@]}" 300 "${mpi[@]}" "$bin" sweep "$s16k" "${grid[@]}" --csv "$tmp/w.csv" --resume >/dev/null 2>"$tmp/w.err" ||
  fail "--resume after kill -9 exited $? ($(cat "$tmp/w.err"))"
grep -qF "w.csv.journal:3: damaged record (CRC mismatch); row $row runs again" "$tmp/w.err" ||
  fail "the damaged line is not reported: $(cat "$tmp/w.err")"
cmp -s "$tmp/one.csv" "$tmp/w.csv" || fail "kill -9 + damaged line + resume: the CSV differs"
[ -e "$tmp/w.csv.journal" ] && fail "the resumed run left its journal"

finish distributed_cli
