// Runs the rows of a study (sweep combinations, simulated search layouts: independent jobs that
// each turn a row index into one line of text) over the processes of a run, with dynamic load
// balancing: rank 0 hands out one row at a time to whichever process has a free thread, so rows
// whose cost differs 100x still keep every process busy. Rank 0 runs rows too (on threads of its
// own, or in forked children for isolated rows), while its main thread hands out rows, collects
// results, checks the time limits and draws the progress line (with an estimate of the time left)
// on stderr.
//
// Faults end the run with a message that names the row or the rank and an exit code of its own,
// never a hang: a row past its time limit (kExitRowTimeout), a rank that disappears or stops
// answering (kExitRankLost). Finished rows are handed to the caller as they complete (the
// journal), so a rerun with --resume needs only the rest.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "models/result.h"
#include "tools/rank_channel.h"

namespace clustersim::tools {

// Exit codes of a study that stopped before every row was done (the journal keeps what was).
inline constexpr int kExitRowTimeout = 4;  // a row ran past --row-timeout
inline constexpr int kExitRankLost = 5;    // a rank died or stopped answering

// A rank that has sent nothing (not even its once-a-second heartbeat) for this long is lost. On
// one host a rank whose process is gone is lost at once.
inline constexpr double kRankSilenceLimit_s = 30;

struct RowStudy {
  std::string command;            // "sweep": messages read "clustersim sweep: ..."
  std::size_t rows = 0;           // rows in the study
  std::vector<std::size_t> todo;  // rows to run, handed out in this order (read on rank 0 only)
  int threads = 1;                // rows at once in each process
  double row_timeout_s = 0;       // a row's wall-clock limit; 0: none
  std::string journal;            // where finished rows go, named in the fault messages; "" none
  // Each row in a child process of its own (fork), for rows that simulate: SimGrid keeps one
  // engine per process, whose clock carries over from one simulation to the next and moves the
  // last digits of later results. A fresh child per row makes every row's result independent of
  // what ran before it in that process, so any split over ranks, or a resumed run, prints the
  // same bytes. A child that crashes ends the run as an internal error naming the row. The
  // process's main thread forks the children and starts no row threads (a child forked beside a
  // thread inside malloc can inherit an allocator lock held: distributed_rows.cc).
  bool isolate = false;
  // "row 7 (cluster.nodes=16)": a row as the messages name it.
  std::function<std::string(std::size_t row)> describe;
  // Runs one row: its result as one line of text. Called on every rank, from `threads` threads
  // at once (isolated: in a forked child per row, `threads` of them at once).
  std::function<std::string(std::size_t row)> evaluate;
  // Rank 0, main thread, one call per row in `todo`, in completion order. An error (the journal
  // cannot be written) ends the run with kExitBadInput.
  std::function<models::Status(std::size_t row, const std::string& result)> finished;
};

// --row-timeout's value in seconds ("10min", "90s"; "" : 0, no limit). Error: not a positive time.
models::Result<double> parse_row_timeout(const std::string& text);

// Runs study.todo over every rank of `ranks`; every rank calls it, with the same study except
// `todo` and `finished`, which only rank 0 uses. Returns once every row is done (on rank 0,
// every `finished` call made). A fault prints its message on rank 0 and ends every process
// through ranks.abort() with kExitRowTimeout, kExitRankLost or kExitBadInput.
void run_rows(RankChannel& ranks, const RowStudy& study);

// Rank 0, instead of run_rows, when it will run no rows (bad input only rank 0 can see, such as
// a journal of another study): the other ranks' run_rows return at once. Elsewhere a no-op.
void release_ranks(RankChannel& ranks);

}  // namespace clustersim::tools
