#include "tools/row_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "models/text_file.h"

namespace clustersim::tools {
namespace {

constexpr std::string_view kMagic = "clustersim-journal";
constexpr int kFormatVersion = 1;

std::string hex(std::uint64_t v, int digits) {
  std::string out(static_cast<std::size_t>(digits), '0');
  for (int i = digits - 1; i >= 0 && v != 0; --i, v >>= 4) {
    out[static_cast<std::size_t>(i)] = "0123456789abcdef"[v & 0xf];
  }
  return out;
}

std::string errno_text() { return std::strerror(errno); }

// Writes all of `data` to `fd`, retrying short writes.
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// The body of a line whose CRC matches; nullopt where it does not (or the line has none).
std::optional<std::string_view> checked_body(std::string_view line) {
  if (line.size() < 9 || line[8] != ' ') return std::nullopt;
  std::uint32_t want = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + 8, want, 16);
  if (ec != std::errc() || end != line.data() + 8) return std::nullopt;
  const std::string_view body = line.substr(9);
  if (crc32(body) != want) return std::nullopt;
  return body;
}

std::string header_body(const JournalHeader& h) {
  return std::string(kMagic) + " " + std::to_string(kFormatVersion) + " " + h.command + " " +
         std::to_string(h.rows) + " " + h.study;
}

}  // namespace

std::uint32_t crc32(std::string_view data) {
  static const std::array<std::uint32_t, 256> kTable = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char ch : data) c = kTable[(c ^ ch) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string study_fingerprint(const std::vector<std::string>& parts) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a offset basis
  auto mix = [&h](std::string_view bytes) {
    for (unsigned char ch : bytes) {
      h ^= ch;
      h *= 1099511628211ull;  // FNV prime
    }
  };
  for (const std::string& p : parts) {
    mix(std::to_string(p.size()) + ":");
    mix(p);
  }
  return hex(h, 16);
}

std::string journal_line(std::string_view body) {
  return hex(crc32(body), 8) + " " + std::string(body) + "\n";
}

models::Result<JournalContents> read_journal(const std::string& path,
                                             const JournalHeader& expected) {
  auto text = models::read_text_file(path);
  if (!text) return models::Error{text.message()};
  const std::string_view all = *text;
  JournalContents out;
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos < all.size();) {
    ++line_no;
    std::size_t nl = all.find('\n', pos);
    const bool complete = nl != std::string_view::npos;
    if (!complete) nl = all.size();
    const std::string_view line = all.substr(pos, nl - pos);
    pos = nl + 1;
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    const auto body = complete ? checked_body(line) : std::nullopt;
    if (line_no == 1) {
      if (!body || body->substr(0, kMagic.size()) != kMagic) {
        return models::Error{where + "not a clustersim journal (its first line is no valid "
                                     "header); remove it or leave out --resume"};
      }
      if (*body != header_body(expected)) {
        return models::Error{where + "written by another study ('" + std::string(*body) +
                             "', this run is '" + header_body(expected) +
                             "': the scenario, a --set or an option differs); remove it or "
                             "leave out --resume"};
      }
      continue;
    }
    // A damaged record's row, where its row number still reads, runs again; the others, whose
    // row cannot be told, show up in rows_to_run as missing.
    if (!complete) {
      out.damaged.push_back(where + "incomplete last record (the run stopped while writing it); "
                                    "its row runs again");
      continue;
    }
    if (!body) {
      std::size_t row = 0;
      const std::size_t space = line.find(' ', 9);
      const bool readable = space != std::string_view::npos &&
                            std::from_chars(line.data() + 9, line.data() + space, row).ptr ==
                                line.data() + space;
      out.damaged.push_back(where + "damaged record (CRC mismatch); " +
                            (readable ? "row " + std::to_string(row) : std::string("its row")) +
                            " runs again");
      continue;
    }
    std::size_t row = 0;
    const auto [end, ec] = std::from_chars(body->data(), body->data() + body->size(), row);
    if (ec != std::errc() || end == body->data() + body->size() || *end != ' ' || row < 1 ||
        row > expected.rows) {
      out.damaged.push_back(where + "damaged record (no row of the study's " +
                            std::to_string(expected.rows) + "); ignored");
      continue;
    }
    out.rows.emplace(row - 1, std::string(body->substr(static_cast<std::size_t>(end + 1 - body->data()))));
  }
  if (line_no == 0) {
    return models::Error{path + ": empty, not a clustersim journal; remove it or leave out --resume"};
  }
  return out;
}

std::vector<std::size_t> rows_to_run(std::size_t rows, const std::map<std::size_t, std::string>& done) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < rows; ++i) {
    if (!done.contains(i)) out.push_back(i);
  }
  return out;
}

models::Result<JournalWriter> JournalWriter::create(
    const std::string& path, const JournalHeader& header,
    const std::map<std::size_t, std::string>& carried) {
  std::string text = journal_line(header_body(header));
  for (const auto& [row, payload] : carried) {
    text += journal_line(std::to_string(row + 1) + " " + payload);
  }
  if (auto st = write_file_atomically(path, text); !st) return models::Error{st.message()};
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return models::Error{path + ": cannot open the journal: " + errno_text()};
  return JournalWriter(path, fd);
}

JournalWriter::JournalWriter(JournalWriter&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

JournalWriter& JournalWriter::operator=(JournalWriter&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

JournalWriter::~JournalWriter() {
  if (fd_ >= 0) ::close(fd_);
}

models::Status JournalWriter::append(std::size_t row, std::string_view payload) {
  // One write() per record: O_APPEND places it whole at the end; a kill can only cut it short,
  // which the CRC catches.
  const std::string line = journal_line(std::to_string(row + 1) + " " + std::string(payload));
  if (fd_ < 0 || !write_all(fd_, line) || ::fsync(fd_) != 0) {
    return models::Error{path_ + ": cannot append to the journal: " + errno_text()};
  }
  return models::Status::Ok();
}

models::Status JournalWriter::remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
    return models::Error{path_ + ": cannot remove the journal: " + errno_text()};
  }
  return models::Status::Ok();
}

models::Result<std::optional<JournalWriter>> open_study_journal(
    const std::string& path, bool resume, const JournalHeader& header,
    const std::function<bool(std::size_t row, const std::string& payload)>& keep) {
  if (path.empty()) return std::optional<JournalWriter>();
  const char* command = header.command.c_str();
  std::map<std::size_t, std::string> carried;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    if (!resume) {
      return models::Error{path + ": the journal of an unfinished run is here; --resume runs "
                                  "only the rows it lacks, or remove it to start over"};
    }
    auto read = read_journal(path, header);
    if (!read) return models::Error{read.message()};
    for (const std::string& why : read->damaged) {
      std::fprintf(stderr, "clustersim %s: %s\n", command, why.c_str());
    }
    for (auto& [row, payload] : read->rows) {
      if (!keep(row, payload)) {
        std::fprintf(stderr, "clustersim %s: %s: row %zu: unreadable record; it runs again\n",
                     command, path.c_str(), row + 1);
        continue;
      }
      carried.emplace(row, std::move(payload));
    }
    std::fprintf(stderr, "clustersim %s: resuming from %s: %zu of %zu rows done\n", command,
                 path.c_str(), carried.size(), header.rows);
  } else if (resume) {
    std::fprintf(stderr, "clustersim %s: no journal %s yet: every row runs\n", command,
                 path.c_str());
  }
  auto writer = JournalWriter::create(path, header, carried);
  if (!writer) return models::Error{writer.message()};
  return std::optional<JournalWriter>(std::move(writer).value());
}

models::Status write_file_atomically(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return models::Error{path + ": cannot write the file: " + errno_text()};
  const bool written = write_all(fd, contents) && ::fsync(fd) == 0;
  const std::string why = errno_text();
  ::close(fd);
  if (!written || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string rename_why = written ? errno_text() : why;
    ::unlink(tmp.c_str());
    return models::Error{path + ": cannot write the file: " + rename_why};
  }
  // The rename itself is durable once the folder is synced.
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return models::Status::Ok();
}

}  // namespace clustersim::tools
