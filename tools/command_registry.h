// The table of subcommands. Each tools/cmd_*.cc registers one command at static-initialisation
// time; main() turns the table into subcommands (command_line.h). A command's setup declares its
// options on its CommandLine and returns the action that runs after parsing. Exit codes: 0
// success, 1 a failed check (verify), 2 bad input (with a message naming the file:line:col or the
// flag).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace clustersim::tools {

class CommandLine;

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitBadInput = 2;

// What `clustersim --version` prints, and what `verify` records as the tool that judged.
inline constexpr const char* kToolVersion = "clustersim 0.1.0";

using CommandAction = std::function<int()>;

struct CommandRegistration {
  std::string name;
  std::string summary;
  int order = 100;  // position in --help: lower first
  std::function<CommandAction(CommandLine& sub)> setup;
  // Two or three real command lines, run from the repository's root, shown under --help
  // ("Examples:"); CTest runs each that writes no file and needs no GPU.
  std::vector<std::string> examples = {};
};

// Adds a command to the table; returns true so it can initialise a static.
bool register_command(CommandRegistration registration);
const std::vector<CommandRegistration>& registered_commands();

// The scenario embedded in the binary (scenarios/default.yaml at build time).
extern const char kEmbeddedDefaultScenario[];

}  // namespace clustersim::tools
