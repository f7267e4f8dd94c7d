#include "models/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace clustersim::models {

std::string YamlReader::child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

bool YamlReader::fail(const YAML::Node& node, const std::string& path, const std::string& what) {
  if (error_) return false;
  std::string at = origin_;
  if (node.IsDefined() && !node.IsNull() && !node.Mark().is_null()) {
    at += ":" + std::to_string(node.Mark().line + 1) + ":" + std::to_string(node.Mark().column + 1);
  }
  error_ = Error{at + ": " + (path.empty() ? "" : path + ": ") + what};
  return false;
}

bool YamlReader::parse(std::string_view text, YAML::Node* root) {
  try {
    root->reset(YAML::Load(std::string(text)));
  } catch (const YAML::ParserException& e) {
    error_ = Error{origin_ + ":" + std::to_string(e.mark.line + 1) + ":" +
                   std::to_string(e.mark.column + 1) + ": invalid YAML: " + e.msg};
    return false;
  }
  return true;
}

bool YamlReader::open_map(const YAML::Node& node, const std::string& path,
                          std::initializer_list<std::string_view> allowed) {
  if (!ok()) return false;
  std::string known;
  for (auto k : allowed) known += (known.empty() ? "" : ", ") + std::string(k);
  if (!node.IsMap()) return fail(node, path, "expected a map with keys " + known);
  for (const auto& entry : node) {
    const YAML::Node key = entry.first;
    if (!key.IsScalar()) return fail(key, path, "a key must be a plain name");
    if (std::find(allowed.begin(), allowed.end(), key.Scalar()) == allowed.end()) {
      return fail(key, child(path, key.Scalar()), "unknown key (known: " + known + ")");
    }
  }
  return true;
}

bool YamlReader::get(const YAML::Node& map, const std::string& path, std::string_view key,
                     bool required, YAML::Node* value) {
  if (!ok()) return false;
  // Copy-construct: assigning a missing key's (invalid) node to another node throws.
  const YAML::Node v = map[std::string(key)];
  if (!v.IsDefined() || v.IsNull()) {
    if (required) return fail(map, child(path, key), "missing");
    value->reset();
    return true;
  }
  if (!v.IsScalar()) return fail(v, child(path, key), "expected a single value");
  value->reset(v);
  return true;
}

bool YamlReader::text(const YAML::Node& map, const std::string& path, std::string_view key,
                      std::string* out, bool required) {
  YAML::Node v;
  if (!get(map, path, key, required, &v)) return false;
  if (!v.IsNull()) *out = v.Scalar();
  return true;
}

bool YamlReader::number(const YAML::Node& map, const std::string& path, std::string_view key,
                        double* out, bool required) {
  YAML::Node v;
  if (!get(map, path, key, required, &v)) return false;
  if (v.IsNull()) return true;  // absent
  const std::string& s = v.Scalar();
  double d = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(d)) {
    return fail(v, child(path, key), "'" + s + "' is not a number");
  }
  *out = d;
  return true;
}

bool YamlReader::integer(const YAML::Node& map, const std::string& path, std::string_view key,
                         int* out, bool required) {
  double d = 0;
  const YAML::Node v = map[std::string(key)];
  if (!number(map, path, key, &d, required)) return false;
  if (!v.IsDefined() || v.IsNull()) return true;
  if (d != std::floor(d) || std::fabs(d) > 2e9) {
    return fail(v, child(path, key), "'" + v.Scalar() + "' is not a whole number");
  }
  *out = static_cast<int>(d);
  return true;
}

bool YamlReader::flag(const YAML::Node& map, const std::string& path, std::string_view key,
                      bool* out, bool required) {
  YAML::Node v;
  if (!get(map, path, key, required, &v)) return false;
  if (v.IsNull()) return true;  // absent
  if (v.Scalar() == "true") *out = true;
  else if (v.Scalar() == "false") *out = false;
  else return fail(v, child(path, key), "expected true or false, got '" + v.Scalar() + "'");
  return true;
}

bool YamlReader::quantity(const YAML::Node& map, const std::string& path, std::string_view key,
                          Result<double> (*parser)(std::string_view), double* out,
                          bool required) {
  YAML::Node v;
  if (!get(map, path, key, required, &v)) return false;
  if (v.IsNull()) return true;  // absent
  auto r = parser(v.Scalar());
  if (!r) return fail(v, child(path, key), r.message());
  *out = *r;
  return true;
}

bool YamlReader::list(const YAML::Node& map, const std::string& path, std::string_view key,
                      YAML::Node* out, bool required) {
  if (!ok()) return false;
  const YAML::Node v = map[std::string(key)];
  if (!v.IsDefined() || v.IsNull()) {
    if (required) return fail(map, child(path, key), "missing");
    out->reset(YAML::Node(YAML::NodeType::Sequence));
    return true;
  }
  if (!v.IsSequence()) return fail(v, child(path, key), "expected a list");
  out->reset(v);
  return true;
}

}  // namespace clustersim::models
