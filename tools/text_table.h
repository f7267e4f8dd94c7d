// A plain-text table for the human output of every command: a header row, aligned columns
// (numbers right, text left), an optional title. Only tools/ prints; this only formats.
#pragma once

#include <string>
#include <vector>

namespace clustersim::tools {

class TextTable {
 public:
  enum class Align { kLeft, kRight };

  explicit TextTable(std::vector<std::string> header, std::vector<Align> align = {});
  void add_row(std::vector<std::string> cells);  // REQUIRES: as many cells as header columns
  void add_separator();
  // The table as lines joined by '\n' (with a trailing newline), each line `indent` spaces in.
  std::string render(int indent = 0) const;

 private:
  std::vector<std::string> header_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;  // an empty row is a separator
};

}  // namespace clustersim::tools
