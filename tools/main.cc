// clustersim: one binary, a thin table of subcommands over the libraries (see
// command_registry.h). Everything that prints or exits lives in tools/.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>

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

int main(int argc, char** argv) {
  using namespace clustersim::tools;
  CLI::App app{
      "clustersim: predict how fast a training job runs on a GPU cluster, what it costs, and "
      "check a real cluster against the prediction"};
  app.require_subcommand(1);
  app.set_version_flag("--version", kToolVersion);

  auto commands = registered_commands();
  std::stable_sort(commands.begin(), commands.end(),
                   [](const auto& a, const auto& b) { return a.order < b.order; });
  std::vector<std::pair<CLI::App*, CommandAction>> actions;
  // The top level shows the first example of the three commands most runs start with.
  std::string examples = "\nExamples (from the repository's root; each command's --help has more):\n";
  for (const auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    actions.emplace_back(sub, c.setup(*sub));
    if (!c.examples.empty()) {
      std::string footer = "\nExamples (from the repository's root):\n";
      for (const auto& e : c.examples) footer += "  " + e + "\n";
      sub->footer(footer);
      if (c.name == "plan" || c.name == "compare" || c.name == "verify") {
        examples += "  " + c.examples.front() + "\n";
      }
    }
  }
  app.footer(examples);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }
  for (auto& [sub, action] : actions) {
    if (sub->parsed()) {
      try {
        return action();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "clustersim %s: internal error: %s\n", sub->get_name().c_str(),
                     e.what());
        return 3;
      }
    }
  }
  return kExitBadInput;
}
