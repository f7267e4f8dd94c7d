#include "tools/range_option.h"

namespace clustersim::tools {

models::Result<MinMax> parse_min_max(
    const std::string& text,
    const std::function<models::Result<double>(std::string_view)>& parse_end,
    bool single_value_allowed) {
  const auto colon = text.find(':');
  if (colon == std::string::npos && !single_value_allowed) {
    return models::Error{"expected MIN:MAX"};
  }
  auto lo = parse_end(std::string_view(text).substr(0, colon));
  auto hi = colon == std::string::npos ? lo : parse_end(std::string_view(text).substr(colon + 1));
  if (!lo || !hi) return models::Error{"expected MIN:MAX"};
  if (*lo > *hi) return models::Error{"'" + text + "': MIN is above MAX"};
  return MinMax{*lo, *hi};
}

}  // namespace clustersim::tools
