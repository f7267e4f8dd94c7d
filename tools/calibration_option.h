// How `plan`, `collective` and `check` find the calibration overlay to apply: --calibration
// FILE, else the scenario's `calibration:` key, else none. Errors are returned, never printed.
#pragma once

#include <optional>
#include <string>

#include "models/calibration.h"
#include "models/result.h"
#include "models/scenario.h"

namespace clustersim::tools {

// The overlay for `cluster`: loaded from `flag_path` when given, else from `scenario_path`
// (already resolved by the scenario loader), else nullopt. Fails on a file that does not load
// or an overlay measured on another GPU model than the cluster's.
models::Result<std::optional<models::Calibration>> calibration_for(
    const std::string& flag_path, const std::string& scenario_path,
    const models::ClusterConfig& cluster);

}  // namespace clustersim::tools
