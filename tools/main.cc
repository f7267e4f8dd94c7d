// clustersim: one binary, a thin table of subcommands over the libraries (see
// command_registry.h). Everything that prints or exits lives in tools/.
#include <utility>
#include <vector>

#include "tools/command_line.h"
#include "tools/command_registry.h"

namespace clustersim::tools {

std::vector<CommandRegistration>& mutable_table() {
  static std::vector<CommandRegistration> table;
  return table;
}

bool register_command(CommandRegistration registration) {
  mutable_table().push_back(std::move(registration));
  return true;
}

const std::vector<CommandRegistration>& registered_commands() { return mutable_table(); }

}  // namespace clustersim::tools

int main(int argc, char** argv) { return clustersim::tools::run_command_line(argc, argv); }
