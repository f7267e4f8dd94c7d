// How commands take measurements: measurement files (`clustersim validate`'s JSON) and
// NVIDIA/nccl-tests' own text output (*_perf logs), which need a scenario naming the hardware
// they ran on. Errors are returned, never printed.
#pragma once

#include <string>
#include <vector>

#include "models/result.h"
#include "validate/measurement_samples.h"

namespace clustersim::tools {

// Every JSON file as its own measurement; every nccl-tests log together as one measurement of
// `scenario_path`'s cluster (validate::load_nccl_tests_files). Fails naming the file: an
// unreadable or malformed file, or a log without a scenario (`scenario_flag` names the flag to
// give).
models::Result<std::vector<validate::MeasurementFile>> load_measurements(
    const std::vector<std::string>& paths, const std::string& scenario_path,
    const std::string& scenario_flag);

}  // namespace clustersim::tools
