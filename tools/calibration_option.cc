#include "tools/calibration_option.h"

namespace clustersim::tools {

std::string calibration_path_for(const std::string& flag_path, const std::string& scenario_path) {
  return flag_path.empty() ? scenario_path : flag_path;
}

models::Result<std::optional<models::Calibration>> calibration_for(
    const std::string& flag_path, const std::string& scenario_path,
    const models::ClusterConfig& cluster) {
  auto c = load_calibration_or_none(calibration_path_for(flag_path, scenario_path));
  if (!c || !*c) return c;
  if (auto s = models::check_calibration_gpu(**c, cluster); !s) return models::Error{s.message()};
  return c;
}

models::Result<std::optional<models::Calibration>> load_calibration_or_none(
    const std::string& path) {
  if (path.empty()) return std::optional<models::Calibration>();
  auto c = models::load_calibration_file(path);
  if (!c) return c.error();
  return std::optional<models::Calibration>(std::move(*c));
}

models::Result<models::StepParams> step_params_with(
    const models::Scenario& scenario, const std::optional<models::Calibration>& calibration) {
  models::StepParams params = models::default_step_params(scenario.cluster);
  if (calibration) {
    // apply_calibration checks the GPU the overlay was measured on first.
    auto applied = models::apply_calibration(*calibration, scenario.cluster,
                                             scenario.workload.precision, &params);
    if (!applied) return models::Error{applied.message()};
  }
  return params;
}

models::Result<models::StepParams> step_params_for(const models::Scenario& scenario,
                                                   const std::string& calibration_flag) {
  auto calibration = calibration_for(calibration_flag, scenario.calibration_path, scenario.cluster);
  if (!calibration) return models::Error{calibration.message()};
  return step_params_with(scenario, *calibration);
}

}  // namespace clustersim::tools
