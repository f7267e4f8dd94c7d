// Reads the text that NVIDIA/nccl-tests' *_perf programs print (src/common.cu's
// writeBenchmarkLine: "size count type redop root | time algbw busbw #wrong" out-of-place then
// in-place) into measurement rows, so that an nccl-tests run can be compared with, or used
// like, a `clustersim validate` sweep. "# Collective test starting: all_reduce_perf" names the
// op of the lines that follow; "N/A" in #wrong (unchecked) reads as -1.
#pragma once

#include <string_view>
#include <vector>

#include "validate/measurement.h"

namespace clustersim::validate {

// One row per data line, in order; `ranks` from "# nThread 1 nGpus 2 ..." and "#  Rank"
// lines (the count of "Rank" lines), 0 when the header is missing; `gpus_per_thread` from
// its "nGpus" (also in a comment line that quotes the header), 0 when absent. Lines that are
// not data are skipped.
std::vector<CollectiveRow> parse_nccl_tests_output(std::string_view text);

}  // namespace clustersim::validate
