// Command-line ranges "MIN:MAX" (search --gpus-range, check --sizes): two ends in the unit the
// option takes, parsed by the caller's parser, MIN no larger than MAX. Errors are returned, never
// printed; the caller names the option.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "models/result.h"

namespace clustersim::tools {

struct MinMax {
  double min = 0;
  double max = 0;
};

// Splits `text` at its colon and parses each end with `parse_end`. With single_value_allowed, a
// text without a colon is the range X:X. Fails with "expected MIN:MAX" where the colon is missing
// or an end does not parse, and with "'TEXT': MIN is above MAX" where the ends are reversed.
models::Result<MinMax> parse_min_max(
    const std::string& text,
    const std::function<models::Result<double>(std::string_view)>& parse_end,
    bool single_value_allowed = false);

}  // namespace clustersim::tools
