// The journal of a long study (sweep rows, simulated search layouts): a text file next to the
// output to which every finished row is appended as it completes, flushed to disk (fsync) before
// the next, so that a run killed at any point loses only the rows in flight and `--resume` reruns
// only the rows missing from it.
//
// Format, one record per line, every line self-checking:
//   <crc32, 8 hex digits> <body>
// where the CRC-32 (IEEE 802.3, as zlib's crc32) covers <body>. The first line's body is the
// header "clustersim-journal 1 <command> <rows> <study>"; each further body is "<row> <payload>",
// row the row's number in the output (from 1) and payload one line of the command's choosing
// (JSON). The functions below take 0-based row indices.
// A line whose CRC does not match, that does not parse or that names a row outside the study is
// damaged: reported, and its row runs again. Single-threaded: one writer (rank 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/result.h"

namespace clustersim::tools {

// CRC-32 of `data` (polynomial 0xEDB88320 reflected, initial and final xor 0xFFFFFFFF).
std::uint32_t crc32(std::string_view data);

// A 16-hex-digit fingerprint (FNV-1a, 64 bits) of the parts, each length-prefixed so that
// ("ab", "c") and ("a", "bc") differ. Names a study: what a resumed run must match.
std::string study_fingerprint(const std::vector<std::string>& parts);

// What a journal belongs to.
struct JournalHeader {
  std::string command;  // "sweep", "search": one word
  std::size_t rows = 0;
  std::string study;  // study_fingerprint of everything that decides the rows' results
};

// One line of the file as written: "<crc> <body>\n".
std::string journal_line(std::string_view body);

// What a journal holds.
struct JournalContents {
  std::map<std::size_t, std::string> rows;  // row -> payload; the first good record of a row wins
  // One message per damaged line, "FILE:LINE: why; row N runs again" (or "...; it runs again"
  // where the row cannot be read).
  std::vector<std::string> damaged;
};

// Reads `path`. Errors (bad input): the file cannot be read, its first line is not a journal
// header, or the header is another study's ("...: written by another study (...); remove it or
// leave out --resume"). A damaged line, including a last one cut short by a kill, is no error.
models::Result<JournalContents> read_journal(const std::string& path,
                                             const JournalHeader& expected);

// The rows of 0..rows-1 with no record in `done`, ascending.
std::vector<std::size_t> rows_to_run(std::size_t rows, const std::map<std::size_t, std::string>& done);

// Appends records to a journal. Not copyable; closes the file when destroyed.
class JournalWriter {
 public:
  // Writes `path` afresh (header, then `carried` records: those a resumed run keeps), through a
  // temporary file in the same folder renamed over it, and opens it for appending.
  static models::Result<JournalWriter> create(const std::string& path, const JournalHeader& header,
                                              const std::map<std::size_t, std::string>& carried);
  JournalWriter(JournalWriter&& other) noexcept;
  JournalWriter& operator=(JournalWriter&& other) noexcept;
  JournalWriter(const JournalWriter&) = delete;
  ~JournalWriter();

  // Appends one record and fsyncs it. REQUIRES: payload holds no newline.
  models::Status append(std::size_t row, std::string_view payload);
  // Closes and deletes the file (the study's output is complete and in place).
  models::Status remove();
  const std::string& path() const { return path_; }

 private:
  JournalWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

// Rank 0 of a study run with a journal at `path` ("" none: nullopt): where a journal is there
// and `resume` is set, reads it, reports its damaged lines on stderr ("clustersim <command>:
// FILE:LINE: ..."), hands each good record to `keep` (false: unreadable, reported, the row runs
// again), then rewrites the journal with the kept records and opens it for appending. Errors (bad
// input): a journal there without `resume` (an unfinished run's: say --resume or remove it), one
// of another study, a journal that cannot be written.
models::Result<std::optional<JournalWriter>> open_study_journal(
    const std::string& path, bool resume, const JournalHeader& header,
    const std::function<bool(std::size_t row, const std::string& payload)>& keep);

// Writes `contents` to `path` atomically: a temporary file in the same folder, fsync'd, then
// renamed over `path`; a reader never sees half a file. Error names the path.
models::Status write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace clustersim::tools
