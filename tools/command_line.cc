// The one file that includes CLI11 (see command_line.h): the option calls forward to CLI11's of
// the same names with the variable's own type, so that types, defaults, checks, messages and
// --help read exactly as when each command called CLI11 itself.
#include "tools/command_line.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <utility>

#include "tools/command_registry.h"

namespace clustersim::tools {

using Option = CommandLine::Option;

Option& Option::required() {
  option_->required();
  return *this;
}
Option& Option::capture_default_str() {
  option_->capture_default_str();
  return *this;
}
Option& Option::take_all() {
  option_->take_all();
  return *this;
}
Option& Option::delimiter(char separator) {
  option_->delimiter(separator);
  return *this;
}
Option& Option::excludes(const Option& other) {
  option_->excludes(other.option_);
  return *this;
}
Option& Option::check_member(const std::vector<std::string>& allowed) {
  option_->check(CLI::IsMember(allowed));
  return *this;
}
Option& Option::check_range(int min, int max) {
  option_->check(CLI::Range(min, max));
  return *this;
}
Option& Option::check_range(double min, double max) {
  option_->check(CLI::Range(min, max));
  return *this;
}
Option& Option::check_positive() {
  option_->check(CLI::PositiveNumber);
  return *this;
}

Option CommandLine::add_option(const std::string& name, std::string& value,
                               const std::string& help) {
  return Option(command_->add_option(name, value, help));
}
Option CommandLine::add_option(const std::string& name, int& value, const std::string& help) {
  return Option(command_->add_option(name, value, help));
}
Option CommandLine::add_option(const std::string& name, std::size_t& value,
                               const std::string& help) {
  return Option(command_->add_option(name, value, help));
}
Option CommandLine::add_option(const std::string& name, double& value, const std::string& help) {
  return Option(command_->add_option(name, value, help));
}
Option CommandLine::add_option(const std::string& name, std::vector<std::string>& values,
                               const std::string& help) {
  return Option(command_->add_option(name, values, help));
}
Option CommandLine::add_option(const std::string& name, std::vector<int>& values,
                               const std::string& help) {
  return Option(command_->add_option(name, values, help));
}
Option CommandLine::add_flag(const std::string& name, bool& value, const std::string& help) {
  return Option(command_->add_flag(name, value, help));
}

int run_command_line(int argc, char** argv) {
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
  std::string examples =
      "\nExamples (from the repository's root; each command's --help has more):\n";
  for (const auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    CommandLine options(*sub);
    actions.emplace_back(sub, c.setup(options));
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

}  // namespace clustersim::tools
