// The study journal (tools/row_journal.h): the CRC-32 against its published check value, the
// line format, records read back, damaged and cut-short lines reported and their rows rerun, a
// journal of another study refused, and the atomic write.
#include "tools/row_journal.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/text_file.h"
#include "tests/scratch_dir.h"

using namespace clustersim::tools;
using clustersim::testing::ScratchDir;

namespace {

namespace fs = std::filesystem;

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string read(const std::string& path) { return *clustersim::models::read_text_file(path); }

const JournalHeader kHeader{"sweep", 4, "0123456789abcdef"};

}  // namespace

TEST_SUITE("tools") {
  TEST_CASE("crc32 is the IEEE CRC-32 (check value of \"123456789\")") {
    CHECK(crc32("123456789") == 0xCBF43926u);
    CHECK(crc32("") == 0u);
  }

  TEST_CASE("study fingerprints tell the parts apart") {
    CHECK(study_fingerprint({"ab", "c"}) != study_fingerprint({"a", "bc"}));
    CHECK(study_fingerprint({"a"}) == study_fingerprint({"a"}));
    CHECK(study_fingerprint({"a"}).size() == 16);
  }

  TEST_CASE("a journal line is its body's CRC and the body") {
    CHECK(journal_line("3 {\"x\":1}") == "ae440ccd 3 {\"x\":1}\n");  // zlib.crc32 agrees
  }

  TEST_CASE("records written are read back, the first of a row winning") {
    const ScratchDir s("journal");
    const std::string path = s.path("j");
    auto w = JournalWriter::create(path, kHeader, {{1, "carried"}});
    REQUIRE(w.ok());
    CHECK(w->append(3, "{\"a\": \"b c\"}").ok());
    CHECK(w->append(3, "later").ok());
    auto read_back = read_journal(path, kHeader);
    REQUIRE(read_back.ok());
    CHECK(read_back->damaged.empty());
    CHECK(read_back->rows == std::map<std::size_t, std::string>{{1, "carried"}, {3, "{\"a\": \"b c\"}"}});
    CHECK(rows_to_run(4, read_back->rows) == std::vector<std::size_t>{0, 2});
    CHECK(w->remove().ok());
    CHECK_FALSE(fs::exists(path));
  }

  TEST_CASE("damaged records are reported and their rows run again") {
    const ScratchDir s("journal");
    const std::string path = s.path("j");
    auto w = JournalWriter::create(path, kHeader, {{0, "zero"}, {1, "one"}, {2, "two"}});
    REQUIRE(w.ok());
    std::string text = read(path);
    SUBCASE("a changed byte") {
      text.replace(text.find("one"), 3, "onE");
      write(path, text);
      auto r = read_journal(path, kHeader);
      REQUIRE(r.ok());
      REQUIRE(r->damaged.size() == 1);
      CHECK(r->damaged[0] == path + ":3: damaged record (CRC mismatch); row 2 runs again");
      CHECK(rows_to_run(4, r->rows) == std::vector<std::size_t>{1, 3});
    }
    SUBCASE("a last line cut short by a kill") {
      write(path, text + "1234abcd 4 {\"half");
      auto r = read_journal(path, kHeader);
      REQUIRE(r.ok());
      REQUIRE(r->damaged.size() == 1);
      CHECK(r->damaged[0].find(":5: incomplete last record") != std::string::npos);
      CHECK(rows_to_run(4, r->rows) == std::vector<std::size_t>{3});
    }
    SUBCASE("a record of a row outside the study") {
      write(path, text + journal_line("9 x"));
      auto r = read_journal(path, kHeader);
      REQUIRE(r.ok());
      REQUIRE(r->damaged.size() == 1);
      CHECK(r->damaged[0].find("no row of the study's 4") != std::string::npos);
    }
    SUBCASE("garbage") {
      write(path, text + "not a record\n");
      auto r = read_journal(path, kHeader);
      REQUIRE(r.ok());
      CHECK(r->damaged.size() == 1);
      CHECK(r->rows.size() == 3);
    }
  }

  TEST_CASE("a journal of another study, or no journal at all, is refused") {
    const ScratchDir s("journal");
    const std::string path = s.path("j");
    REQUIRE(JournalWriter::create(path, kHeader, {}).ok());
    JournalHeader other = kHeader;
    SUBCASE("another fingerprint") { other.study = "fedcba9876543210"; }
    SUBCASE("another row count") { other.rows = 5; }
    SUBCASE("another command") { other.command = "search"; }
    auto r = read_journal(path, other);
    REQUIRE_FALSE(r.ok());
    CHECK(r.message().find(path + ":1: written by another study") == 0);
    write(path, "x,y\n1,2\n");
    auto csv = read_journal(path, kHeader);
    REQUIRE_FALSE(csv.ok());
    CHECK(csv.message().find("not a clustersim journal") != std::string::npos);
  }

  TEST_CASE("resuming rewrites the journal with only the good records") {
    const ScratchDir s("journal");
    const std::string path = s.path("j");
    REQUIRE(JournalWriter::create(path, kHeader, {{0, "zero"}}).ok());
    write(path, read(path) + "garbage\n");
    auto r = read_journal(path, kHeader);
    REQUIRE(r.ok());
    auto w = JournalWriter::create(path, kHeader, r->rows);
    REQUIRE(w.ok());
    CHECK(w->append(2, "two").ok());
    auto again = read_journal(path, kHeader);
    REQUIRE(again.ok());
    CHECK(again->damaged.empty());
    CHECK(again->rows.size() == 2);
  }

  TEST_CASE("an atomic write leaves the whole file or the old one, no temporary") {
    const ScratchDir s("journal");
    const std::string path = s.path("out.csv");
    write(path, "old");
    CHECK(write_file_atomically(path, "new\n").ok());
    CHECK(read(path) == "new\n");
    std::size_t files = 0;
    for (const auto& e : fs::directory_iterator(s.dir())) files += e.is_regular_file();
    CHECK(files == 1);
    auto st = write_file_atomically(s.path("missing/out.csv"), "x");
    REQUIRE_FALSE(st.ok());
    CHECK(st.message().find("missing/out.csv: cannot write the file") != std::string::npos);
  }
}
