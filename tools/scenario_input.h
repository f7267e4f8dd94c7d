// How commands take a scenario: a path, or nothing for the embedded default
// (scenarios/default.yaml at build time). Errors are returned, never printed here.
#pragma once

#include <string>

#include "models/result.h"
#include "models/scenario.h"

namespace clustersim::tools {

// Loads `path`, or the embedded default scenario when `path` is empty.
models::Result<models::Scenario> load_scenario_or_default(const std::string& path);

// Prints "clustersim <command>: <message>" to stderr and returns kExitBadInput (2).
int fail_bad_input(const std::string& command, const std::string& message);

}  // namespace clustersim::tools
