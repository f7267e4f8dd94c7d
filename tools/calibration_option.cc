#include "tools/calibration_option.h"

namespace clustersim::tools {

models::Result<std::optional<models::Calibration>> calibration_for(
    const std::string& flag_path, const std::string& scenario_path,
    const models::ClusterConfig& cluster) {
  const std::string& path = flag_path.empty() ? scenario_path : flag_path;
  if (path.empty()) return std::optional<models::Calibration>();
  auto c = models::load_calibration_file(path);
  if (!c) return c.error();
  if (auto s = models::check_calibration_gpu(*c, cluster); !s) return models::Error{s.message()};
  return std::optional<models::Calibration>(std::move(*c));
}

}  // namespace clustersim::tools
