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

// Columns for human output: $COLUMNS when it holds a width of 40 or more, else the terminal's
// width when stdout is one, else 80.
int output_columns();

// The widest line of `text` in display columns (UTF-8 code points).
std::size_t widest_line(const std::string& text);

// `text` wrapped at word boundaries into lines of at most `columns`: the first line begins with
// `first`, the others with `rest`; a word longer than a line stays whole. Ends with a newline.
std::string wrap_text(const std::string& text, std::size_t columns, const std::string& first,
                      const std::string& rest);

}  // namespace clustersim::tools
