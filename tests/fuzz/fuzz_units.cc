// Unit strings and ranges on the command line and in files ("400Gb/s", "2 GiB", "18ms",
// "989 TFLOP/s", "$2.50", "700W", "check --sizes 1MiB:8GiB"): the first byte picks the parser.
// A value that parses is finite and not negative.
#include <cmath>

#include "fuzz_common.h"
#include "models/units.h"
#include "tools/range_option.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace clustersim;
  if (size == 0) return 0;
  const std::string text = fuzz::text_of(data + 1, size - 1);
  auto check = [](const models::Result<double>& r) {
    if (r.ok() && (!std::isfinite(*r) || *r < 0)) __builtin_trap();
    if (!r.ok() && r.message().empty()) __builtin_trap();
  };
  switch (data[0] % 9) {
    case 0: check(models::parse_bandwidth_Bps(text)); break;
    case 1: check(models::parse_size_bytes(text)); break;
    case 2: check(models::parse_size_bytes(text, true)); break;
    case 3: check(models::parse_time_s(text)); break;
    case 4: check(models::parse_flops(text)); break;
    case 5: check(models::parse_count(text)); break;
    case 6: check(models::parse_usd(text)); break;
    case 7: check(models::parse_watts(text)); break;
    default: {
      auto r = tools::parse_min_max(
          text, [](std::string_view t) { return models::parse_size_bytes(t, true); }, true);
      if (r.ok() && !(r->min <= r->max)) __builtin_trap();
      break;
    }
  }
  return 0;
}
