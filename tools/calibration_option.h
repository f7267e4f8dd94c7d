// How the commands find the calibration overlay to apply (--calibration FILE, else the
// scenario's `calibration:` key, else none) and the step parameters it gives a scenario. Errors
// are returned, never printed.
#pragma once

#include <optional>
#include <string>

#include "models/calibration.h"
#include "models/result.h"
#include "models/scenario.h"
#include "models/step_model.h"

namespace clustersim::tools {

// The overlay's path: `flag_path` (--calibration) when given, else `scenario_path` (the
// scenario's calibration: key, already resolved); "" for none.
std::string calibration_path_for(const std::string& flag_path, const std::string& scenario_path);

// The overlay for `cluster`: loaded from `flag_path` when given, else from `scenario_path`
// (already resolved by the scenario loader), else nullopt. Fails on a file that does not load
// or an overlay measured on another GPU model than the cluster's.
models::Result<std::optional<models::Calibration>> calibration_for(
    const std::string& flag_path, const std::string& scenario_path,
    const models::ClusterConfig& cluster);

// The overlay at `path` (already resolved), or nullopt for "". Fails on a file that does not
// load; the GPU it was measured on is not checked here.
models::Result<std::optional<models::Calibration>> load_calibration_or_none(
    const std::string& path);

// The analytic model's defaults for the scenario's GPU with `calibration` applied (none: the
// defaults). Fails on an overlay measured on another GPU model than the scenario's cluster's.
models::Result<models::StepParams> step_params_with(
    const models::Scenario& scenario, const std::optional<models::Calibration>& calibration);

// step_params_with() the overlay calibration_for() finds (--calibration FILE, else the scenario's
// calibration: key, else none), as `plan` uses them.
models::Result<models::StepParams> step_params_for(const models::Scenario& scenario,
                                                   const std::string& calibration_flag);

}  // namespace clustersim::tools
