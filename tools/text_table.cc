#include "tools/text_table.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace clustersim::tools {
namespace {

// Display width: count UTF-8 code points, not bytes, so "µs" and "≤" align.
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

TextTable::TextTable(std::vector<std::string> header, std::vector<Align> align)
    : header_(std::move(header)), align_(std::move(align)) {
  align_.resize(header_.size(), Align::kRight);
  if (!align_.empty() && align.empty()) align_[0] = Align::kLeft;
}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != header_.size()) {
    std::fprintf(stderr, "%s:%d: TextTable row has %zu cells, header %zu\n", __FILE__, __LINE__,
                 cells.size(), header_.size());
    std::abort();
  }
  rows_.push_back(std::move(cells));
}

void TextTable::add_separator() { rows_.emplace_back(); }

std::string TextTable::render(int indent) const {
  std::vector<std::size_t> width(header_.size());
  for (std::size_t c = 0; c < header_.size(); ++c) width[c] = display_width(header_[c]);
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], display_width(row[c]));
  }
  const std::string pad(indent, ' ');
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = pad;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::size_t fill = width[c] - display_width(row[c]);
      if (c > 0) out += "  ";
      if (align_[c] == Align::kRight) out += std::string(fill, ' ') + row[c];
      else out += row[c] + (c + 1 < row.size() ? std::string(fill, ' ') : "");
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::size_t total = 0;
  for (auto w : width) total += w;
  total += 2 * (width.empty() ? 0 : width.size() - 1);
  const std::string rule = pad + std::string(total, '-') + "\n";
  std::string out = line(header_) + rule;
  for (const auto& row : rows_) out += row.empty() ? rule : line(row);
  return out;
}

int output_columns() {
  if (const char* c = std::getenv("COLUMNS"); c != nullptr && *c != '\0') {
    char* end = nullptr;
    const long v = std::strtol(c, &end, 10);
    if (*end == '\0' && v >= 40 && v <= 10000) return static_cast<int>(v);
  }
  winsize w{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col >= 40) {
    return w.ws_col;
  }
  return 80;
}

std::size_t widest_line(const std::string& text) {
  std::size_t widest = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) widest = std::max(widest, display_width(line));
  return widest;
}

std::string wrap_text(const std::string& text, std::size_t columns, const std::string& first,
                      const std::string& rest) {
  std::istringstream words(text);
  std::string out, line = first;
  bool empty_line = true;  // nothing after the prefix yet
  for (std::string word; words >> word;) {
    if (!empty_line && display_width(line) + 1 + display_width(word) > columns) {
      out += line + "\n";
      line = rest;
      empty_line = true;
    }
    line += (empty_line ? "" : " ") + word;
    empty_line = false;
  }
  return out + line + "\n";
}

}  // namespace clustersim::tools
