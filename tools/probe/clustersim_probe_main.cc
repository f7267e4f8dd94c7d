// clustersim-probe: `clustersim validate` as a standalone executable to copy onto a rented node
// that has an NVIDIA driver and little else. It compiles tools/cmd_validate.cc itself, so the
// options, the run and the output are the same; this file only provides the one-command table.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tools/command_line.h"
#include "tools/command_registry.h"

namespace clustersim::tools {

namespace {
std::vector<CommandRegistration>& table() {
  static std::vector<CommandRegistration> t;
  return t;
}
}  // namespace

bool register_command(CommandRegistration registration) {
  table().push_back(std::move(registration));
  return true;
}

const std::vector<CommandRegistration>& registered_commands() { return table(); }

}  // namespace clustersim::tools

int main(int argc, char** argv) {
  using namespace clustersim::tools;
  const auto& commands = registered_commands();
  if (commands.size() != 1 || commands[0].name != "validate") {
    std::fprintf(stderr, "clustersim-probe: built without the validate command\n");
    return 3;
  }
  CLI::App app{"clustersim-probe: " + commands[0].summary};
  app.set_version_flag("--version", "clustersim-probe 0.1.0");
  CommandLine options(app);
  CommandAction action = commands[0].setup(options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  }
  try {
    return action();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "clustersim-probe: internal error: %s\n", e.what());
    return 3;
  }
}
