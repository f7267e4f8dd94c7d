// Writes a measurement file so that an interrupted run always leaves a valid one: after every
// finished row or section the whole file is rewritten to "<path>.partial" through a temporary
// file and an atomic rename; at the end it is renamed to <path> with "complete": true. A reader
// therefore sees either the previous or the next complete JSON text, never a torn one.
// Not thread-safe: one writer per file, called from the thread that owns the Measurement.
#pragma once

#include <string>

#include "models/result.h"
#include "validate/measurement.h"

namespace clustersim::validate {

// Writes `text` to `path` atomically: "<path>.tmp.<pid>" is written, flushed to disk (fsync)
// and renamed over `path`. Fails naming the path and the system error.
models::Status write_file_atomically(const std::string& path, const std::string& text);

class MeasurementWriter {
 public:
  // `final_path` is where the complete file goes; the partial file is final_path + ".partial".
  explicit MeasurementWriter(std::string final_path);

  const std::string& final_path() const { return final_path_; }
  std::string partial_path() const { return final_path_ + ".partial"; }

  // Rewrites the partial file with `m` (m.complete should be false).
  models::Status checkpoint(const Measurement& m);

  // Sets m.complete = true, rewrites the partial file with it and renames that to the final path
  // (one atomic step: the final file appears as the partial one goes).
  models::Status finish(Measurement& m);

 private:
  std::string final_path_;
};

}  // namespace clustersim::validate
