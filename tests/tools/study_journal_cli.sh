#!/usr/bin/env bash
# The journal of sweep and of search --refine-des in one process (no MPI needed): a finished run leaves the CSV and no
# journal; a run killed with SIGKILL and resumed, a run stopped by --row-timeout and resumed, and a
# journal with a damaged line all end with the CSV of an uninterrupted run; a leftover journal
# without --resume, another study's journal and --resume without a journal exit 2.
# Usage: study_journal_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"
s70b="$src/scenarios/llama3-70b-64xh100-ndr-rail.yaml"
s16k="$src/scenarios/llama3-405b-16k-h100.yaml"
# The study grid (cli_test_lib.bash): $study_rows simulated rows, long enough to be killed half-way.
grid=("${study_grid[@]}")

"$bin" sweep "$s16k" "${grid[@]}" --csv "$tmp/ref.csv" >"$tmp/ref.txt" 2>"$tmp/err.txt" ||
  fail "the uninterrupted sweep exited $? ($(cat "$tmp/err.txt"))"
[ "$(wc -l <"$tmp/ref.csv")" -eq $((study_rows + 1)) ] || fail "the CSV has not $study_rows rows and a header"
[ -e "$tmp/ref.csv.journal" ] && fail "a finished run left its journal"
ls "$tmp" | grep -q '\.tmp\.' && fail "a temporary file was left: $(ls "$tmp")"

# kill_after CSV N: runs the grid's sweep to CSV and kills it (SIGKILL, with the row it runs)
# once its journal holds N rows.
kill_after() {
  "$bin" sweep "$s16k" "${grid[@]}" --csv "$1" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 600); do
    [ "$({ wc -l <"$1.journal"; } 2>/dev/null || echo 0)" -gt "$2" ] && break
    sleep 0.05
  done
  pkill -9 -P "$pid"
  kill -9 "$pid"
  wait "$pid" 2>/dev/null
}

# SIGKILL once two rows are journaled, then --resume: the same file.
kill_after "$tmp/k.csv" 2
[ -e "$tmp/k.csv" ] && fail "a killed run wrote its CSV"
done_rows=$(($(wc -l <"$tmp/k.csv.journal") - 1))
[ "$done_rows" -ge 2 ] && [ "$done_rows" -lt "$study_rows" ] ||
  fail "the killed run journaled $done_rows rows, want 2-$((study_rows - 1))"
expect_bad sweep "--resume runs only the rows it lacks" "$s16k" "${grid[@]}" --csv "$tmp/k.csv"
"$bin" sweep "$s16k" "${grid[@]}" --csv "$tmp/k.csv" --resume >/dev/null 2>"$tmp/resume.err" ||
  fail "--resume exited $? ($(cat "$tmp/resume.err"))"
grep -qF "resuming from $tmp/k.csv.journal: $done_rows of $study_rows rows done" "$tmp/resume.err" ||
  fail "--resume did not say what it kept: $(cat "$tmp/resume.err")"
cmp -s "$tmp/ref.csv" "$tmp/k.csv" || fail "killed + resumed CSV differs from the uninterrupted one"
[ -e "$tmp/k.csv.journal" ] && fail "the resumed run left its journal"

# --row-timeout: a row past the limit is named, the run ends with exit 4, --resume finishes it.
"$bin" sweep "$s16k" "${grid[@]}" --csv "$tmp/t.csv" --row-timeout 1ms >/dev/null 2>"$tmp/t.err"
rc=$?
[ "$rc" -eq 4 ] || fail "--row-timeout 1ms exited $rc, want 4 ($(cat "$tmp/t.err"))"
grep -qE "row [0-9]+ \(cluster.fabric.oversubscription=[0-9], workload.seq_len=[0-9]+\) ran past --row-timeout 1 ms on rank 0" "$tmp/t.err" ||
  fail "the timed-out row is not named: $(cat "$tmp/t.err")"
grep -qF "rows are in $tmp/t.csv.journal: rerun with --resume" "$tmp/t.err" || fail "no --resume hint"
[ -e "$tmp/t.csv" ] && fail "a timed-out run wrote its CSV"
"$bin" sweep "$s16k" "${grid[@]}" --csv "$tmp/t.csv" --resume >/dev/null 2>&1 || fail "--resume after a timeout exited $?"
cmp -s "$tmp/ref.csv" "$tmp/t.csv" || fail "timed-out + resumed CSV differs"

# A damaged record is reported, its row runs again, and the file is the same.
kill_after "$tmp/d.csv" 3
row=$(sed -n 3p "$tmp/d.csv.journal" | cut -d' ' -f2)
sed -i '3s/"ok":true/"ok":tru3/' "$tmp/d.csv.journal"
"$bin" sweep "$s16k" "${grid[@]}" --csv "$tmp/d.csv" --resume >/dev/null 2>"$tmp/d.err" ||
  fail "--resume over a damaged journal exited $?"
grep -qF "d.csv.journal:3: damaged record (CRC mismatch); row $row runs again" "$tmp/d.err" ||
  fail "the damaged line is not reported: $(cat "$tmp/d.err")"
cmp -s "$tmp/ref.csv" "$tmp/d.csv" || fail "CSV after a damaged journal differs"

# --json to stdout with --journal: the same rows as without.
"$bin" sweep "$s70b" --set cluster.nodes=4,8 --json >"$tmp/plain.json" || fail "sweep --json exited $?"
"$bin" sweep "$s70b" --set cluster.nodes=4,8 --json --journal "$tmp/j.journal" >"$tmp/j.json" ||
  fail "sweep --json --journal exited $?"
cmp -s "$tmp/plain.json" "$tmp/j.json" || fail "--journal changed the JSON"

# Another study's journal, and --resume with no journal to read.
"$bin" sweep "$s70b" --set cluster.nodes=4,8 --csv "$tmp/o.csv" >/dev/null || fail "sweep exited $?"
cp "$tmp/k.csv" "$tmp/o.csv.journal"
expect_bad sweep "not a clustersim journal" "$s70b" --set cluster.nodes=4,8 --csv "$tmp/o.csv" --resume
rm -f "$tmp/o.csv.journal"
"$bin" sweep "$s16k" "${grid[@]}" --csv "$tmp/o.csv" --row-timeout 1ms >/dev/null 2>&1
expect_bad sweep "written by another study" "$s70b" --set cluster.nodes=4,8 --csv "$tmp/o.csv" --resume
expect_bad sweep "--resume: needs the journal" "$s70b" --set cluster.nodes=4,8 --resume
expect_bad sweep "--row-timeout 5: " "$s70b" --set cluster.nodes=4,8 --row-timeout 5
expect_bad sweep "--row-timeout 0s: must be more than 0" "$s70b" --set cluster.nodes=4,8 --row-timeout 0s

# search --refine-des --journal: stopped by --row-timeout, then resumed: the output of a run
# that was never stopped (less the wall time).
strip_wall() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [d.pop(k) for k in ("wall_s","layouts_per_minute")]; print(json.dumps(d, indent=1, sort_keys=True))' "$1"; }
refine=(search "$s70b" --refine-des 3 --top 4 --threads 1 --json)
"$bin" "${refine[@]}" >"$tmp/s.json" 2>/dev/null || fail "search --refine-des exited $?"
"$bin" "${refine[@]}" --journal "$tmp/s.journal" --row-timeout 1ms >/dev/null 2>"$tmp/s.err"
rc=$?
[ "$rc" -eq 4 ] || fail "search --row-timeout 1ms exited $rc, want 4 ($(cat "$tmp/s.err"))"
grep -qE "layout 1 \(tp [^)]*\) ran past --row-timeout" "$tmp/s.err" || fail "the layout is not named: $(cat "$tmp/s.err")"
[ -e "$tmp/s.journal" ] || fail "search --journal left no journal"
"$bin" "${refine[@]}" --journal "$tmp/s.journal" --resume >"$tmp/s2.json" 2>/dev/null || fail "search --resume exited $?"
[ "$(strip_wall "$tmp/s.json")" = "$(strip_wall "$tmp/s2.json")" ] || fail "search resumed differs"
[ -e "$tmp/s.journal" ] && fail "search left its journal"
expect_bad search "--journal keeps the --refine-des simulations" "$s70b" --journal "$tmp/x.journal"
expect_bad search "--resume: give the --journal FILE" "$s70b" --refine-des 2 --resume

finish study_journal_cli
