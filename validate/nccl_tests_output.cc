#include "validate/nccl_tests_output.h"

#include <sstream>
#include <string>

namespace clustersim::validate {
namespace {

bool read_timing(std::istringstream& in, CollectiveTiming* t) {
  std::string wrong;
  if (!(in >> t->time_us >> t->algbw_GBps >> t->busbw_GBps >> wrong)) return false;
  t->wrong = wrong == "N/A" ? -1 : std::stoll(wrong);
  return true;
}

}  // namespace

std::vector<CollectiveRow> parse_nccl_tests_output(std::string_view text) {
  std::vector<CollectiveRow> rows;
  std::string op;
  int ranks = 0;
  int gpus_per_thread = 0;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    const std::string kStart = "# Collective test starting: ";
    if (line.rfind(kStart, 0) == 0) {
      op = line.substr(kStart.size());
      if (const auto perf = op.find("_perf"); perf != std::string::npos) op.resize(perf);
      ranks = 0;
      continue;
    }
    if (line.rfind("#  Rank ", 0) == 0) {
      ++ranks;
      continue;
    }
    if (line.empty() || line[0] == '#') {
      // "# nThread 1 nGpus 8 minBytes ...": the GPUs each thread drives.
      if (const auto at = line.find(" nGpus "); at != std::string::npos) {
        std::istringstream in(line.substr(at + 7));
        int n = 0;
        if (in >> n && n > 0 && n <= 4096) gpus_per_thread = n;
      }
      continue;
    }
    std::istringstream in(line);
    CollectiveRow r;
    if (!(in >> r.size_bytes >> r.count >> r.type >> r.redop >> r.root)) continue;
    try {
      if (!read_timing(in, &r.out_of_place) || !read_timing(in, &r.in_place)) continue;
    } catch (const std::exception&) {  // a #wrong that is neither a number nor N/A
      continue;
    }
    r.op = op;
    r.ranks = ranks;
    r.gpus_per_thread = gpus_per_thread;
    rows.push_back(r);
  }
  return rows;
}

}  // namespace clustersim::validate
