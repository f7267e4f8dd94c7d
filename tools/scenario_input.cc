#include "tools/scenario_input.h"

#include <cstdio>

#include "tools/command_registry.h"

namespace clustersim::tools {

models::Result<models::Scenario> load_scenario_or_default(const std::string& path) {
  if (path.empty()) return models::load_scenario_text(kEmbeddedDefaultScenario, "<embedded default>");
  return models::load_scenario_file(path);
}

int fail_bad_input(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "clustersim %s: %s\n", command.c_str(), message.c_str());
  return kExitBadInput;
}

}  // namespace clustersim::tools
