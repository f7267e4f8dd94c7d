// The command line of the clustersim binary: the options each subcommand declares, and the parse
// that turns argv into the one command to run. CLI11 is the parser underneath, and only
// command_line.cc includes it (its header costs every file that includes it about 10 s of
// compile time); the commands declare their options through CommandLine, whose calls and help
// text read as CLI11's. Parse errors print as CLI11 prints them; nothing here exits.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace clustersim::tools {

// The options of one subcommand, as its setup declares them. Each add_* binds a variable that
// the parse fills (the variable must outlive the parse: commands keep theirs in a shared struct
// that their action holds) and returns an Option for the checks that follow. Borrows the CLI11
// subcommand; main() owns it for the whole run.
class CommandLine {
 public:
  // One declared option: its checks chain, each as CLI11's option call of the same name says
  // (help text included: "TEXT:{a,b}", "INT in [1 - 64]", "REQUIRED", "Excludes: --gpus").
  class Option {
   public:
    Option& required();             // the parse fails without it
    Option& capture_default_str();  // --help shows the variable's value before parsing
    Option& take_all();             // a repeated option keeps every value, not the last
    Option& delimiter(char separator);  // "1,2,4" is three values
    Option& excludes(const Option& other);  // the parse fails when both are given
    // Checks on the value; a failing value fails the parse with CLI11's message.
    Option& check_member(const std::vector<std::string>& allowed);  // one of `allowed`
    Option& check_range(int min, int max);        // integer in [min, max] (CLI::Range)
    Option& check_range(double min, double max);  // number in [min, max] (CLI::Range)
    Option& check_positive();  // a number above 0 (CLI::PositiveNumber)

   private:
    friend class CommandLine;
    explicit Option(CLI::Option* option) : option_(option) {}
    CLI::Option* option_;  // owned by the subcommand
  };

  explicit CommandLine(CLI::App& command) : command_(&command) {}

  // A positional when `name` has no leading '-', else "-s,--long" names. Vectors take every
  // value given (positionals: the rest of the line).
  Option add_option(const std::string& name, std::string& value, const std::string& help);
  Option add_option(const std::string& name, int& value, const std::string& help);
  Option add_option(const std::string& name, std::size_t& value, const std::string& help);
  Option add_option(const std::string& name, double& value, const std::string& help);
  Option add_option(const std::string& name, std::vector<std::string>& values,
                    const std::string& help);
  Option add_option(const std::string& name, std::vector<int>& values, const std::string& help);
  // A flag: true when given.
  Option add_flag(const std::string& name, bool& value, const std::string& help);

 private:
  CLI::App* command_;
};

// main(): builds the subcommands from the table (command_registry.h), parses argv and runs the
// action of the command given. Returns the exit code: 0 for --help and --version, kExitBadInput
// (2) when the line does not parse (CLI11's message on stderr), else the action's; an exception
// out of an action is reported as an internal error (3).
int run_command_line(int argc, char** argv);

}  // namespace clustersim::tools
