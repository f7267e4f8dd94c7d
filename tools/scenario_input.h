// How commands take a scenario: a path, or nothing for the embedded default
// (scenarios/default.yaml at build time). Errors are returned, never printed here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/result.h"
#include "models/scenario.h"

namespace clustersim::tools {

// Loads `path`, or the embedded default scenario when `path` is empty, with `overrides` applied
// (plan, compare, topo, search --set). Where the overrides change the GPU count or tp/pp/cp and
// leave dp alone, dp follows: GPUs / (tp x pp x cp), as sweep derives it. check_layout as in
// models::load_scenario_file.
models::Result<models::Scenario> load_scenario_or_default(
    const std::string& path, const std::vector<models::ScenarioOverride>& overrides = {},
    bool check_layout = true);

// Splits "v1,v2,{a: 1, b: 2}" at the `sep` characters outside brackets, braces and quotes,
// each part trimmed of spaces and tabs.
std::vector<std::string> split_values(const std::string& text, char sep);

// Checks the keys of one --set option `option` (as typed: "KEY=..."), each a scenario key that
// no key in `*seen` overlaps; adds them to *seen. Errors are worded as sweep words them.
models::Status check_set_keys(const std::string& option, const std::vector<std::string>& keys,
                              std::vector<std::string>* seen);

// The --set KEY=VALUE options of plan, compare, topo and search: one value each (sweep takes
// lists), keys as sweep takes them (models::check_scenario_key), none overlapping another.
models::Result<std::vector<models::ScenarioOverride>> parse_set_options(
    const std::vector<std::string>& sets);

// The dp that follows from overrides of the GPU count or tp/pp/cp when they leave dp alone and
// the GPUs divide; nullopt otherwise (the loader then reports what does not fit).
std::optional<int> derived_dp(const models::Scenario& base,
                              const std::vector<models::ScenarioOverride>& overrides);

// Prints "clustersim <command>: <message>" to stderr and returns kExitBadInput (2).
int fail_bad_input(const std::string& command, const std::string& message);

}  // namespace clustersim::tools
