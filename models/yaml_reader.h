// Reading the small YAML files of the feedback loop (the calibration overlay, the claims file)
// with errors that cite "file:line:col: key.path: what is wrong". Internal to models/: it
// exposes yaml-cpp types, which only models/*.cc link against. The first error is kept and every
// later read returns false, so a caller unwinds with one message. Never throws.
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "models/result.h"
#include "models/text_file.h"

namespace clustersim::models {

class YamlReader {
 public:
  explicit YamlReader(std::string origin) : origin_(std::move(origin)) {}

  // Parses the text; false (with the parser's line and column) on invalid YAML.
  bool parse(std::string_view text, YAML::Node* root);

  // `node` is a map whose keys are all in `allowed` (the first unknown key is an error).
  bool open_map(const YAML::Node& node, const std::string& path,
                std::initializer_list<std::string_view> allowed);
  // Readers of map[key]. Absent keys: false with "missing" when required, else true and *out
  // unchanged.
  bool text(const YAML::Node& map, const std::string& path, std::string_view key,
            std::string* out, bool required = false);
  bool integer(const YAML::Node& map, const std::string& path, std::string_view key, int* out,
               bool required = false);
  bool number(const YAML::Node& map, const std::string& path, std::string_view key, double* out,
              bool required = false);
  bool flag(const YAML::Node& map, const std::string& path, std::string_view key, bool* out,
            bool required = false);
  // A quantity with its unit, through one of units.h's parsers (parse_time_s, ...).
  bool quantity(const YAML::Node& map, const std::string& path, std::string_view key,
                Result<double> (*parser)(std::string_view), double* out, bool required = false);
  // A sequence (absent: an empty one, unless required).
  bool list(const YAML::Node& map, const std::string& path, std::string_view key,
            YAML::Node* out, bool required = false);

  // Records an error at `node` (or at the file when the node has no position).
  bool fail(const YAML::Node& node, const std::string& path, const std::string& what);

  bool ok() const { return !error_.has_value(); }
  const Error& error() const { return *error_; }
  const std::string& origin() const { return origin_; }

  static std::string child(const std::string& path, std::string_view key);

 private:
  bool get(const YAML::Node& map, const std::string& path, std::string_view key, bool required,
           YAML::Node* value);
  std::string origin_;
  std::optional<Error> error_;
};

}  // namespace clustersim::models
